package ensemble

import (
	"maps"
	"path/filepath"
	"slices"
)

// SecretEnvNames lists every variable a model profile names in api_key_env,
// those of e's own profiles and those of every file loaded with it: its
// parent's, its child ensembles' and theirs. Script agents and tools never
// see them, whichever file of the tree declares them, and their values are
// redacted from the whole run's outputs.
func (e *Ensemble) SecretEnvNames() []string {
	names := slices.Clone(e.treeKeys)
	for _, m := range e.Models {
		if m.APIKeyEnv != "" && !slices.Contains(names, m.APIKeyEnv) {
			names = append(names, m.APIKeyEnv)
		}
	}
	return names
}

// expansion is a ${VAR} expanded in a field of a file of the load.
type expansion struct {
	d    *decoder
	f    field
	name string
}

// shareTreeKeys gives top and every child ensemble loaded with it (n's)
// the api_key_env variables of them all: a child's profile may name a key
// the top file's profiles do not. A ${VAR} expanded before the child that
// names VAR was read (in the parent's profiles, in a profiles file, in
// another child) is reported as every expanded key is.
func shareTreeKeys(top *Ensemble, n *nesting, expanded []expansion) {
	if n == nil {
		return
	}
	tree := []*Ensemble{top}
	for _, c := range n.loaded {
		if c != nil {
			tree = append(tree, c)
		}
	}
	keys := map[string]*ModelProfile{}
	for _, e := range tree {
		for _, m := range e.Models {
			if m.APIKeyEnv != "" && keys[m.APIKeyEnv] == nil {
				keys[m.APIKeyEnv] = m
			}
		}
	}
	for _, x := range expanded {
		if _, reported := x.d.keyVars[x.name]; reported {
			continue
		}
		if p := keys[x.name]; p != nil {
			x.d.bad(x.f, "uses ${%s}, the API key variable of profile %q of %s; keys are never expanded into the file", x.name, p.Name, filepath.Base(p.File))
		}
	}
	names := slices.Sorted(maps.Keys(keys))
	for _, e := range tree {
		e.treeKeys = names
	}
}
