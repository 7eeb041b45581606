package ensemble

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"go.yaml.in/yaml/v3"
)

// SkippedDir reports whether a search of a folder tree for ensemble or
// feature files skips the folder named name: hidden folders, testdata,
// vendor and node_modules.
func SkippedDir(name string) bool {
	switch name {
	case "testdata", "vendor", "node_modules":
		return true
	}
	return strings.HasPrefix(name, ".")
}

// topLevelAgents finds an "agents" key at the top level of a YAML file
// that does not parse.
var topLevelAgents = regexp.MustCompile(`(?m)^["']?agents["']?[ \t]*:`)

// LooksLikeEnsemble reports whether data is an ensemble file rather than
// some other YAML (responses, profiles) or JSON (a state file): its top
// level has an "agents" key. A file too broken to parse counts when a line
// starts with "agents:".
func LooksLikeEnsemble(data []byte) bool { return ensembleLike(data, false) }

// ensembleLike is LooksLikeEnsemble, and with misspelt also true for a file
// that looks like an ensemble whose "agents" key is misspelt ("agent",
// "agnets"): a top-level "name" that is a text (in a responses file, every
// key holds a list) and a key close to "agents". A search of a folder
// finds such a file, so that the typo is reported rather than the file
// skipped as some other YAML.
func ensembleLike(data []byte, misspelt bool) bool {
	var top map[string]any
	if err := yaml.Unmarshal(data, &top); err != nil {
		return topLevelAgents.Match(data)
	}
	if _, ok := top["agents"]; ok || !misspelt {
		return ok
	}
	if _, ok := top["name"].(string); !ok {
		return false
	}
	for k := range top {
		if Suggest(k, []string{"agents"}) != "" {
			return true
		}
	}
	return false
}

// FindFiles lists the ensemble files under the folder dir, in lexical
// order: the .yaml and .yml files that look like an ensemble (or like one
// whose "agents" key is misspelt), skipping the folders SkippedDir names.
// A file that cannot be read is listed, for its load to say why.
func FindFiles(dir string) ([]string, error) {
	var paths []string
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		switch {
		case err != nil:
			return err
		case d.IsDir() && path != dir && SkippedDir(d.Name()):
			return filepath.SkipDir
		case d.IsDir():
			return nil
		}
		if ext := filepath.Ext(path); ext != ".yaml" && ext != ".yml" {
			return nil
		}
		data, err := ReadFile(path)
		if err != nil || ensembleLike(data, true) {
			paths = append(paths, path)
		}
		return nil
	})
	return paths, err
}

// includedFiles maps each of paths to the files it includes as child
// ensembles, through `ensemble:` or a `dispatch:` case. Read from the YAML
// alone, so that a file that does not load still claims its children.
func includedFiles(paths []string) map[string][]string {
	in := map[string][]string{}
	for _, p := range paths {
		data, err := ReadFile(p)
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

// TopLevel is paths less the files that another of them includes as a
// child ensemble, directly or not: they load as part of it, whose profiles
// and tools they may use, not on their own. Files that only include each
// other (a cycle, which is an error) are all kept.
func TopLevel(paths []string) []string {
	covered := Included(paths)
	out := paths[:0:0]
	for _, p := range paths {
		if !covered[filepath.Clean(p)] {
			out = append(out, p)
		}
	}
	return out
}

// Included is the set of the files of paths (cleaned) that another of
// them, not itself included, includes as a child ensemble, directly or
// not: those TopLevel leaves out.
func Included(paths []string) map[string]bool {
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
	return covered
}

// Expand expands the paths of files to check: a folder becomes the
// top-level ensemble files under it (FindFiles, then TopLevel: a child
// ensemble is checked with the file that includes it), in lexical order;
// a file, a missing path and "-" (standard input) stay as they are. A
// folder with no ensemble file is an error: checking nothing must not pass.
func Expand(paths []string) ([]string, error) {
	var out []string
	for _, p := range paths {
		fi, err := os.Stat(p)
		if p == "-" || err != nil || !fi.IsDir() {
			out = append(out, p) // a missing file is reported by its load
			continue
		}
		found, err := FindFiles(p)
		if err != nil {
			return nil, err
		}
		if len(found) == 0 {
			return nil, fmt.Errorf("%s: no ensemble file in this directory (a .yaml or .yml file with an \"agents\" key)", p)
		}
		out = append(out, TopLevel(found)...)
	}
	return out, nil
}
