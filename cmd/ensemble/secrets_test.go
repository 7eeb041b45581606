package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ensemble-run/ensemble/internal/parity"
)

// A key that reaches a script's output, its stderr, its error or the run's
// input is redacted from everything the run writes: the result, the events,
// the state, the report and the errors.
func TestNoOutputHoldsAKey(t *testing.T) {
	t.Parallel()
	const key = "sk-cli-secret-0123456789"
	env := map[string]string{"MYKEY": key, "PATH": os.Getenv("PATH")}
	dir := t.TempDir()
	file := filepath.Join("testdata", "secrets", "ensemble.yaml")
	for _, output := range []string{"json", "jsonl", "text"} {
		state, report := filepath.Join(dir, output+".json"), filepath.Join(dir, output+".md")
		o := ensembleEnv(t, env, "run", file, "--output", output, "--verbose", "--state", state, "--report", report, "--input", "use "+key)
		if o.code != 1 {
			t.Fatalf("--output %s: exit %d\n%s", output, o.code, o.stderr)
		}
		for name, text := range map[string]string{"stdout": o.stdout, "stderr": o.stderr, "state": read(t, state), "report": read(t, report)} {
			if strings.Contains(text, key) || strings.Contains(text, key[:12]) {
				t.Errorf("--output %s: the key is in the %s:\n%s", output, name, text)
			}
			if name != "stderr" && !strings.Contains(text, "[REDACTED]") {
				t.Errorf("--output %s: nothing redacted in the %s:\n%s", output, name, text)
			}
		}
	}
}

func read(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// A model that repeats its key, as it is and JSON-escaped (sk\u002d…):
// no sink holds it in any spelling: the events, the result, the report,
// the state database and its export, the recording, the text summary.
func TestNoSinkHoldsAnEscapedKey(t *testing.T) {
	t.Parallel()
	srv := parity.Start(t)
	dir := t.TempDir()
	file := parity.Case{File: "secret.yaml"}.Path()
	db, report, rec := filepath.Join(dir, "run.db"), filepath.Join(dir, "run.md"), filepath.Join(dir, "recording")
	o := ensembleEnv(t, srv.Env(false), "run", file, "--output", "jsonl", "--state", db, "--report", report, "--record", rec)
	if o.code != 0 {
		t.Fatalf("exit %d\n%s", o.code, o.stderr)
	}
	sinks := map[string]string{"events": o.stdout, "stderr": o.stderr, "report": read(t, report)}
	for _, args := range [][]string{{"state", "export", db}, {"state", "show", db, "--output", "json"}, {"state", "show", db, "--output", "text"}} {
		x := ensembleEnv(t, srv.Env(false), args...)
		sinks[strings.Join(args[:2], " ")+" "+args[len(args)-1]] = x.stdout + x.stderr
	}
	files, _ := filepath.Glob(filepath.Join(rec, "*"))
	if len(files) == 0 {
		t.Fatal("nothing recorded")
	}
	for _, f := range append(files, db) {
		sinks[f] = read(t, f)
	}
	for name, text := range sinks {
		if parity.ShowsKey(text) {
			t.Errorf("the key shows in the %s:\n%s", name, text)
		}
	}
	if !strings.Contains(sinks["events"], "[REDACTED]") {
		t.Errorf("nothing redacted in the events:\n%s", sinks["events"])
	}
}

// An LLM agent whose key is not set stops the run before its first turn
// (exit 2, naming the variable and the offline way), not mid-run after the
// scripts before it ran; with injected replies for it, no key is needed.
func TestMissingKeyBeforeTheFirstTurn(t *testing.T) {
	t.Parallel()
	dir := filepath.Join("testdata", "nokey")
	mark := filepath.Join(t.TempDir(), "ran")
	env := map[string]string{"MARK": mark, "PATH": os.Getenv("PATH")}
	o := ensembleEnv(t, env, "run", filepath.Join(dir, "ensemble.yaml"), "--output", "json")
	if o.code != 2 || !strings.Contains(o.stderr, `agent "writer" calls model profile "fast", whose key is read from ENSEMBLE_TEST_UNSET_KEY, which is not set`) ||
		!strings.Contains(o.stderr, "--responses") {
		t.Fatalf("exit %d\n%s", o.code, o.stderr)
	}
	if _, err := os.Stat(mark); err == nil {
		t.Error("the script ran before the key was checked")
	}
	o = ensembleEnv(t, env, "run", filepath.Join(dir, "ensemble.yaml"), "--responses", filepath.Join(dir, "responses.yaml"), "--output", "json")
	if o.code != 0 {
		t.Errorf("with injected replies: exit %d\n%s", o.code, o.stderr)
	}
}
