package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestProfilesFromEnvironmentAndFlag: the CLI reads profiles from
// $ENSEMBLE_PROFILES and from --profiles, alone or together. (Which wins on
// a clash reaches the wire: kinds/llm tests it.)
func TestProfilesFromEnvironmentAndFlag(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	envFile := write("env.yaml", "models:\n  shared: {provider: ollama, model: from-env}\n  envonly: {provider: ollama, model: env-only}\n")
	flagFile := write("flag.yaml", "models:\n  shared: {provider: ollama, model: from-flag}\n")
	ens := write("ensemble.yaml", `name: profiles
agents:
  - {name: a, model_profile: shared}
  - {name: b, model_profile: envonly}
`)
	validate := func(env string, args ...string) outcome {
		vars := map[string]string{}
		if env != "" {
			vars["ENSEMBLE_PROFILES"] = env
		}
		return ensembleEnv(t, vars, append([]string{"validate"}, args...)...)
	}
	if o := validate("", ens); o.code != 2 || !strings.Contains(o.stderr, `unknown model_profile "shared"`) {
		t.Fatalf("without profiles: exit %d %s", o.code, o.stderr)
	}
	if o := validate(envFile, ens); o.code != 0 {
		t.Fatalf("$ENSEMBLE_PROFILES not read: exit %d %s", o.code, o.stderr)
	}
	if o := validate(envFile, ens, "--profiles", flagFile); o.code != 0 {
		t.Fatalf("with both: exit %d %s", o.code, o.stderr)
	}
	if o := validate("", ens, "--profiles", flagFile); o.code != 2 || !strings.Contains(o.stderr, `"envonly"`) {
		t.Fatalf("--profiles alone: exit %d %s", o.code, o.stderr)
	}
}
