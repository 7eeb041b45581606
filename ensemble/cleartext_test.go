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

// A profiles file's profile is warned of only when the file run calls it
// (itself or as a fallback): a shared profiles file may hold many others.
func TestKeyInClearOfAProfilesFile(t *testing.T) {
	t.Parallel()
	env := func(string) (string, bool) { return "x", true }
	profiles := writeFile(t, "profiles.yaml", `models:
  remote: {provider: openai, model: x, base_url: "http://10.0.0.5/v1", api_key_env: K}
  backup: {provider: openai, model: x, base_url: "http://10.0.0.6/v1", api_key_env: K}
  unused: {provider: openai, model: x, base_url: "http://10.0.0.7/v1", api_key_env: K}
  main: {provider: openai, model: x, base_url: "https://api.example.com/v1", api_key_env: K, fallback: [backup]}
`)
	for agents, want := range map[string][]string{
		"  - {name: a, model_profile: remote}\n": {`model profile "remote"`},
		"  - {name: a, model_profile: main}\n":   {`model profile "backup"`},
		"  - {name: a, ask: q}\n":                nil,
	} {
		e, err := LoadBytes("k.yaml", []byte("name: k\nagents:\n"+agents), LoadOptions{Kinds: testKinds, LookupEnv: env, ProfileFiles: []string{profiles}})
		if err != nil {
			t.Fatalf("%s: %v", agents, err)
		}
		if len(e.Warnings) != len(want) {
			t.Fatalf("%s: warnings %v, want %v", agents, e.Warnings, want)
		}
		for i, w := range want {
			if msg := e.Warnings[i].Error(); !strings.Contains(msg, w) || !strings.HasPrefix(msg, profiles) {
				t.Errorf("%s: warning %q, want %q in %s", agents, msg, w, profiles)
			}
		}
	}
}
