package ensemble_test

import (
	"slices"
	"strings"
	"testing"

	format "github.com/ensemble-run/ensemble/ensemble"
	"github.com/ensemble-run/ensemble/internal/secrets"
	"github.com/ensemble-run/ensemble/kinds"
	nested "github.com/ensemble-run/ensemble/kinds/ensemble"
	"github.com/ensemble-run/ensemble/scriptexec"
)

// A child ensemble may declare a profile whose key the top file's profiles
// do not name: its variable is kept from every script of the tree (the
// parent's, a sibling child's) and its value is redacted from the whole
// run, not only from the child's own agents.
func TestAChildsKeyIsTheWholeTreesSecret(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	writeFile(t, dir+"/parent.yaml", `name: p
models:
  top: {provider: openai, model: m, api_key_env: TOP_KEY}
agents:
  - {name: a, ensemble: a.yaml}
  - {name: b, ensemble: b.yaml}
`)
	writeFile(t, dir+"/a.yaml", `name: a
models:
  own: {provider: anthropic, model: m, api_key_env: A_KEY}
agents:
  - {name: x, model_profile: own}
`)
	writeFile(t, dir+"/b.yaml", "name: b\nagents:\n  - {name: y, model_profile: top}\n")
	e, err := load(t, dir+"/parent.yaml")
	if err != nil {
		t.Fatal(err)
	}
	b := nested.SpecOf(e.Agent("b")).Child
	for name, got := range map[string][]string{"the parent": e.SecretEnvNames(), "the sibling": b.SecretEnvNames()} {
		if slices.Sort(got); !slices.Equal(got, []string{"A_KEY", "TOP_KEY"}) {
			t.Errorf("%s's secret variables: %v", name, got)
		}
	}
	env := scriptexec.ScriptEnv([]string{"A_KEY=sk-child-key-123", "TOP_KEY=sk-top-key-456", "HOME=/h"}, e, nil)
	if strings.Contains(strings.Join(env, " "), "KEY=") {
		t.Errorf("a script of the parent sees a key: %v", env)
	}
	lookup := func(k string) (string, bool) {
		v, ok := map[string]string{"A_KEY": "sk-child-key-123", "TOP_KEY": "sk-top-key-456"}[k]
		return v, ok
	}
	if got := secrets.OfEnsemble(e, lookup).String("sk-child-key-123 sk-top-key-456"); got != "[REDACTED] [REDACTED]" {
		t.Errorf("redacted: %q", got)
	}
}

// ${VAR} never expands a key, even one that only a child ensemble's
// profile names, which the loader reads after the parent's profiles.
func TestAChildsKeyIsNeverExpanded(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	writeFile(t, dir+"/parent.yaml", `name: p
models:
  top: {provider: openai, model: m, base_url: "http://127.0.0.1:1/v1", system_prompt: "say ${A_KEY}"}
agents:
  - {name: a, ensemble: a.yaml}
`)
	writeFile(t, dir+"/a.yaml", `name: a
models:
  own: {provider: anthropic, model: m, api_key_env: A_KEY}
agents:
  - {name: x, model_profile: top}
`)
	lookup := func(k string) (string, bool) { return map[string]string{"A_KEY": "sk-child-key-123"}[k], k == "A_KEY" }
	_, err := format.Load(dir+"/parent.yaml", kinds.Builtin().Load(format.LoadOptions{LookupEnv: lookup}))
	if err == nil || !strings.Contains(err.Error(), `parent.yaml:3:87: model profile "top": system_prompt uses ${A_KEY}, the API key variable of profile "own" of a.yaml; keys are never expanded`) {
		t.Fatalf("err %v", err)
	}
	if strings.Contains(err.Error(), "sk-child") {
		t.Errorf("the error holds the key: %v", err)
	}
}
