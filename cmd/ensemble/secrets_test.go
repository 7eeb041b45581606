package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
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
