package ensemble_test

import (
	"strings"
	"testing"

	. "github.com/ensemble-run/ensemble/ensemble"
)

// A key sent over plain http to another machine is a warning; https, a
// server on this machine, and a profile without a key are not.
func TestKeyInClearWarns(t *testing.T) {
	t.Parallel()
	env := func(string) (string, bool) { return "x", true }
	for base, warns := range map[string]bool{
		"http://api.example.com/v1": true,
		"http://10.0.0.5:8000/v1":   true,
		"HTTP://Proxy/v1":           true,
		"https://api.example.com":   false,
		"http://localhost:11434/v1": false,
		"http://127.0.0.2:8080/v1":  false,
		"http://[::1]:8080/v1":      false,
		"http://ollama.localhost/":  false,
	} {
		src := "name: k\nmodels:\n  m: {provider: openai, model: x, base_url: \"" + base + "\", api_key_env: K}\n  free: {provider: openai, model: x, base_url: \"http://api.example.com/v1\"}\nagents:\n  - {name: a, model_profile: m}\n"
		e, err := LoadBytes("k.yaml", []byte(src), LoadOptions{Kinds: testKinds, LookupEnv: env})
		if err != nil {
			t.Fatalf("%s: %v", base, err)
		}
		got := len(e.Warnings) == 1 && strings.HasPrefix(e.Warnings[0].Error(), `k.yaml:3:3: model profile "m" sends its key ($K) over plain http to `)
		if got != warns || (!warns && len(e.Warnings) != 0) {
			t.Errorf("%s: warnings %v, want one: %v", base, e.Warnings, warns)
		}
	}
}
