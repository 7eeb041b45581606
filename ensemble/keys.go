package ensemble

import "slices"

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

// shareTreeKeys gives top and every child ensemble loaded with it the
// api_key_env variables of them all: a child's profile may name a key the
// top file's profiles do not.
func shareTreeKeys(top *Ensemble, n *nesting) {
	if n == nil {
		return
	}
	tree := []*Ensemble{top}
	for _, c := range n.loaded {
		if c != nil {
			tree = append(tree, c)
		}
	}
	set := map[string]bool{}
	for _, e := range tree {
		for _, m := range e.Models {
			if m.APIKeyEnv != "" {
				set[m.APIKeyEnv] = true
			}
		}
	}
	names := make([]string, 0, len(set))
	for name := range set {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, e := range tree {
		e.treeKeys = names
	}
}
