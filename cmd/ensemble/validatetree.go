package main

import (
	"fmt"
	"path/filepath"

	"go.yaml.in/yaml/v3"

	"github.com/ensemble-run/ensemble/ensemble"
	"github.com/ensemble-run/ensemble/graph"
)

// includedFiles maps each of paths (found under a folder) to the files it
// includes as child ensembles, through `ensemble:` or a `dispatch:` case
// (docs/cli.md#ensemble-validate). Read from the YAML alone, so that a file
// that does not load still claims its children.
func includedFiles(paths []string) map[string][]string {
	in := map[string][]string{}
	for _, p := range paths {
		data, err := ensemble.ReadFile(p)
		if err != nil {
			continue
		}
		var top struct {
			Agents []struct {
				Ensemble any `yaml:"ensemble"`
				Dispatch struct {
					Cases   map[string]any `yaml:"cases"`
					Default any            `yaml:"default"`
				} `yaml:"dispatch"`
			} `yaml:"agents"`
		}
		if yaml.Unmarshal(data, &top) != nil {
			continue
		}
		add := func(v any) {
			if s, ok := v.(string); ok && s != "" {
				if !filepath.IsAbs(s) {
					s = filepath.Join(filepath.Dir(p), s)
				}
				in[filepath.Clean(p)] = append(in[filepath.Clean(p)], filepath.Clean(s))
			}
		}
		for _, a := range top.Agents {
			add(a.Ensemble)
			for _, c := range a.Dispatch.Cases {
				add(c)
			}
			add(a.Dispatch.Default)
		}
	}
	return in
}

// withoutIncluded drops from paths the files that another of them
// includes, directly or not: they are validated as part of it, whose
// profiles and tools they may use, not on their own. Files that only
// include each other (a cycle, which is an error) are all kept.
func withoutIncluded(paths []string) []string {
	in := includedFiles(paths)
	included := map[string]bool{}
	for _, kids := range in {
		for _, k := range kids {
			included[k] = true
		}
	}
	covered := map[string]bool{}
	var cover func(p string)
	cover = func(p string) {
		for _, k := range in[p] {
			if !covered[k] {
				covered[k] = true
				cover(k)
			}
		}
	}
	for _, p := range paths {
		if !included[filepath.Clean(p)] {
			cover(filepath.Clean(p))
		}
	}
	out := paths[:0:0]
	for _, p := range paths {
		if !covered[filepath.Clean(p)] {
			out = append(out, p)
		}
	}
	return out
}

// treeNote is what `validate` adds to a valid file's ok: how many child
// ensembles were validated with it.
func treeNote(e *ensemble.Ensemble) string {
	seen := map[*ensemble.Ensemble]bool{}
	var walk func(e *ensemble.Ensemble)
	walk = func(e *ensemble.Ensemble) {
		for _, a := range e.Agents {
			if n, ok := a.Kind.(graph.Nester); ok {
				for _, c := range n.Children(a) {
					if !seen[c] {
						seen[c] = true
						walk(c)
					}
				}
			}
		}
	}
	walk(e)
	switch len(seen) {
	case 0:
		return ""
	case 1:
		return " (with 1 child ensemble)"
	}
	return fmt.Sprintf(" (with %d child ensembles)", len(seen))
}
