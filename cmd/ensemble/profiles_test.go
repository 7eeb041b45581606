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
	// $ENSEMBLE_PROFILES is a list of files, as $PATH is
	if o := validate(flagFile+string(os.PathListSeparator)+envFile, ens); o.code != 0 {
		t.Fatalf("a list in $ENSEMBLE_PROFILES: exit %d %s", o.code, o.stderr)
	}
	// a file that cannot be read says where its path came from
	missing := filepath.Join(dir, "missing.yaml")
	if o := validate(missing, ens); o.code != 2 || !strings.Contains(o.stderr, missing+": cannot read this $ENSEMBLE_PROFILES file: ") {
		t.Fatalf("a missing $ENSEMBLE_PROFILES file: exit %d %s", o.code, o.stderr)
	}
	if o := validate("", ens, "--profiles", missing); o.code != 2 || !strings.Contains(o.stderr, missing+": cannot read this --profiles file: ") {
		t.Fatalf("a missing --profiles file: exit %d %s", o.code, o.stderr)
	}
}

// --profiles redirects a profile the file declares: the command line wins,
// and validate says which profile it replaced (an error with --strict).
func TestProfilesFlagWinsOverTheFile(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	flagFile := filepath.Join(dir, "local.yaml")
	ens := filepath.Join(dir, "ensemble.yaml")
	for p, body := range map[string]string{
		flagFile: "models:\n  fast: {provider: ollama, model: local-model}\n",
		ens:      "name: p\nmodels:\n  fast: {provider: openai, model: gpt-4o, api_key_env: OPENAI_API_KEY}\nagents:\n  - {name: a, model_profile: fast}\n",
	} {
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	o := ensembleCmd(t, "", "validate", ens, "--profiles", flagFile)
	if o.code != 0 || !strings.Contains(o.stderr, `ensemble.yaml:3:3: warning: model profile "fast" is replaced by the one of `+flagFile) {
		t.Errorf("validate: exit %d\n%s", o.code, o.stderr)
	}
	if o := ensembleCmd(t, "", "validate", ens, "--profiles", flagFile, "--strict"); o.code != 2 {
		t.Errorf("validate --strict: exit %d\n%s", o.code, o.stderr)
	}
	g := ensembleCmd(t, "", "graph", ens, "--profiles", flagFile)
	if !strings.Contains(g.stdout, "local-model") || strings.Contains(g.stdout, "gpt-4o") {
		t.Errorf("the file's profile is still used:\n%s", g.stdout)
	}
}
