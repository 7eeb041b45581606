package ensemble

import (
	"maps"
	"path/filepath"
	"slices"
)

// SecretEnvNames lists every variable that holds a secret: those a model
// profile names in api_key_env, a webhook trigger in secret_env, and an
// agent's kind in its own fields (SecretVarser: an ask agent's notify), of
// e and of every file loaded with it: its parent, its child ensembles and
// theirs. Script agents, tools and MCP servers never see them, whichever
// file of the tree names them, and their values are redacted from the
// whole run's outputs.
func (e *Ensemble) SecretEnvNames() []string {
	names := slices.Clone(e.treeKeys)
	for _, v := range e.secretVars() {
		if !slices.Contains(names, v) {
			names = append(names, v)
		}
	}
	return names
}

// SecretVarser is a Kind whose agents name variables holding secrets in
// their own fields, kept from scripts and redacted as keys are.
type SecretVarser interface {
	SecretVars(a *Agent) []string
}

// secretVars are the variables e's own profiles, triggers and agents name
// as holding secrets.
func (e *Ensemble) secretVars() []string {
	var names []string
	for _, m := range e.Models {
		if m.APIKeyEnv != "" {
			names = append(names, m.APIKeyEnv)
		}
	}
	for _, t := range e.Triggers {
		if t.Hook != nil && t.Hook.SecretEnv != "" {
			names = append(names, t.Hook.SecretEnv)
		}
	}
	for _, a := range e.Agents {
		if k, ok := a.Kind.(SecretVarser); ok {
			names = append(names, k.SecretVars(a)...)
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
// the secret variables of them all (secretVars): a child's profile may name
// a key the top file's profiles do not. A ${VAR} expanded before the child that
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
	set := map[string]bool{}
	for _, e := range tree {
		for _, v := range e.secretVars() {
			set[v] = true
		}
	}
	names := slices.Sorted(maps.Keys(set))
	for _, e := range tree {
		e.treeKeys = names
	}
}
