package scriptexec

import (
	"slices"
	"strings"

	"github.com/ensemble-run/ensemble/ensemble"
)

// ScriptEnv is the environment of a script agent or tool (docs/semantics.md#script-agents): base
// (the parent's), with extra set on top (replacing variables of the same
// name), minus every variable a model profile of ens names in api_key_env,
// even when extra sets it. extra is added in sorted order; ens may be nil.
func ScriptEnv(base []string, ens *ensemble.Ensemble, extra map[string]string) []string {
	secret := map[string]bool{}
	if ens != nil {
		for _, n := range ens.SecretEnvNames() {
			secret[n] = true
		}
	}
	out := make([]string, 0, len(base)+len(extra))
	for _, kv := range base {
		k, _, _ := strings.Cut(kv, "=")
		if _, replaced := extra[k]; replaced || secret[k] {
			continue
		}
		out = append(out, kv)
	}
	keys := make([]string, 0, len(extra))
	for k := range extra {
		if !secret[k] {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	for _, k := range keys {
		out = append(out, k+"="+extra[k])
	}
	return out
}
