package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ensemble-run/ensemble/state"
)

// TestStateFileIsNeverClobbered: a new run does not overwrite a state file
// holding an unfinished run, nor a file that is not a state file, nor one
// that another process is writing; it does replace a finished run's.
func TestStateFileIsNeverClobbered(t *testing.T) {
	t.Parallel()
	ex := "../../examples/writer-reviewer/"
	dir := t.TempDir()
	runWith := func(stateFile string, extra ...string) outcome {
		args := append([]string{"run", ex + "ensemble.yaml", "--responses", ex + "responses.yaml", "--output", "json", "--state", stateFile}, extra...)
		return ensembleCmd(t, "", args...)
	}

	doc := filepath.Join(dir, "notes.txt")
	os.WriteFile(doc, []byte("my notes"), 0o644)
	if o := runWith(doc); o.code != 2 || !strings.Contains(o.stderr, "refusing to overwrite") {
		t.Fatalf("not a state file: exit %d %s", o.code, o.stderr)
	}
	if b, _ := os.ReadFile(doc); string(b) != "my notes" {
		t.Fatalf("the file was overwritten: %q", b)
	}

	unfinished := filepath.Join(dir, "unfinished.json")
	if o := runWith(unfinished, "--timeout", "1ns"); o.code != 4 {
		t.Fatalf("timed-out run: exit %d %s", o.code, o.stderr)
	}
	if o := runWith(unfinished); o.code != 2 || !strings.Contains(o.stderr, "ensemble resume "+unfinished) {
		t.Fatalf("unfinished run: exit %d %s", o.code, o.stderr)
	}
	if o := ensembleCmd(t, "", "resume", unfinished, "--output", "json", "--timeout", "1m"); o.code != 0 {
		t.Fatalf("resume: exit %d %s", o.code, o.stderr)
	}
	// Finished now: a new run may replace it.
	if o := runWith(unfinished); o.code != 0 {
		t.Fatalf("over a finished run: exit %d %s", o.code, o.stderr)
	}

	busy := filepath.Join(dir, "busy.json")
	unlock, err := state.Lock(busy)
	if err != nil {
		t.Fatal(err)
	}
	defer unlock()
	if o := runWith(busy); o.code != 2 || !strings.Contains(o.stderr, "another ensemble process") {
		t.Fatalf("locked: exit %d %s", o.code, o.stderr)
	}
	if o := ensembleCmd(t, "", "resume", unfinished); o.code != 0 {
		t.Fatalf("a resume of a finished run: exit %d %s", o.code, o.stderr)
	}
}
