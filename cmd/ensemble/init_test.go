package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// `ensemble init` writes an ensemble that `ensemble run` (with its
// responses) and `ensemble test` pass at once, and never overwrites.
func TestInitScaffoldsAWorkingEnsemble(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "starter") // created by init
	o := ensembleCmd(t, "", "init", dir)
	if o.code != 0 {
		t.Fatalf("init: exit %d\n%s", o.code, o.stderr)
	}
	ens, resp := filepath.Join(dir, "ensemble.yaml"), filepath.Join(dir, "responses.yaml")
	for _, want := range []string{
		"created " + ens, "created " + resp, "created " + filepath.Join(dir, "scripts", "gather.py"),
		"ensemble run " + ens + " --responses " + resp, "ensemble test " + dir,
	} {
		if !strings.Contains(o.stdout, want) {
			t.Errorf("init's output lacks %q:\n%s", want, o.stdout)
		}
	}
	if fi, err := os.Stat(filepath.Join(dir, "scripts", "gather.py")); err != nil || fi.Mode()&0o111 == 0 {
		t.Errorf("the script is not executable: %v", err)
	}

	o = ensembleCmd(t, "", "run", ens, "--responses", resp, "--output", "json")
	if o.code != 0 {
		t.Fatalf("run: exit %d\nstdout:\n%s\nstderr:\n%s", o.code, o.stdout, o.stderr)
	}
	var res struct {
		CompletionReason string         `json:"completion_reason"`
		FinalState       map[string]any `json:"final_state"`
	}
	if err := json.Unmarshal([]byte(o.stdout), &res); err != nil || res.CompletionReason != "completed" || len(res.FinalState) != 2 {
		t.Errorf("run: %v, %+v, want both agents completed:\n%s", err, res, o.stdout)
	}

	o = ensembleCmd(t, "", "test", dir)
	if o.code != 0 || !strings.Contains(o.stdout, "1 scenarios (1 passed)") {
		t.Fatalf("test: exit %d\nstdout:\n%s\nstderr:\n%s", o.code, o.stdout, o.stderr)
	}

	o = ensembleCmd(t, "", "init", dir)
	if o.code != 2 || !strings.Contains(o.stderr, "init does not overwrite") || !strings.Contains(o.stderr, ens) || !strings.Contains(o.stderr, resp) {
		t.Errorf("a second init: exit %d, want 2 and the files listed\n%s", o.code, o.stderr)
	}
}

// A folder with one file of the skeleton is left untouched.
func TestInitRefusesToOverwriteAnyFile(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	mine := filepath.Join(dir, "responses.yaml")
	if err := os.WriteFile(mine, []byte("mine\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	o := ensembleCmd(t, "", "init", dir)
	if o.code != 2 || !strings.Contains(o.stderr, mine) || strings.Contains(o.stderr, "ensemble.yaml") {
		t.Errorf("exit %d, want 2 naming only %s\n%s", o.code, mine, o.stderr)
	}
	if data, _ := os.ReadFile(mine); string(data) != "mine\n" {
		t.Errorf("responses.yaml was overwritten: %q", data)
	}
	if _, err := os.Stat(filepath.Join(dir, "ensemble.yaml")); err == nil {
		t.Error("init wrote files although it refused")
	}
}

// The commands init prints can be pasted into a shell as they are, and a
// file named for the folder says so.
func TestInitOutputIsQuotedAndAFileIsNotAFolder(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "my ensemble")
	o := ensembleCmd(t, "", "init", dir)
	if o.code != 0 {
		t.Fatalf("init: exit %d\n%s", o.code, o.stderr)
	}
	ens, resp := filepath.Join(dir, "ensemble.yaml"), filepath.Join(dir, "responses.yaml")
	for _, want := range []string{"ensemble run '" + ens + "' --responses '" + resp + "'", "ensemble test '" + dir + "'"} {
		if !strings.Contains(o.stdout, want) {
			t.Errorf("init's output lacks %q:\n%s", want, o.stdout)
		}
	}
	o = ensembleCmd(t, "", "init", ens)
	if want := "ensemble: init: " + ens + " is a file, not a folder: name a folder (a new one is made)\n"; o.code != 2 || o.stderr != want {
		t.Errorf("init of a file: exit %d %q", o.code, o.stderr)
	}
}
