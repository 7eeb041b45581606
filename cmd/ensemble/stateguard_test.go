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
// that another process is writing; it does replace a finished run's. No
// lock file is left beside any of them.
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

	// Counts in messages agree with their number.
	one := filepath.Join(dir, "one.json")
	if o := runWith(one, "--max-turns", "1"); o.code != 3 {
		t.Fatalf("one turn: exit %d %s", o.code, o.stderr)
	}
	b, _ := os.ReadFile(one)
	os.WriteFile(one, []byte(strings.Replace(string(b), `"completion_reason": "max_total_turns"`, `"completion_reason": ""`, 1)), 0o600)
	if o := runWith(one); o.code != 2 || !strings.Contains(o.stderr, "has not finished (1 turn done)") {
		t.Fatalf("one turn done: exit %d %s", o.code, o.stderr)
	}

	// A run killed before it finished: its state has no completion reason.
	unfinished := filepath.Join(dir, "unfinished.json")
	if o := runWith(unfinished); o.code != 0 {
		t.Fatalf("first run: exit %d %s", o.code, o.stderr)
	}
	b, _ = os.ReadFile(unfinished)
	os.WriteFile(unfinished, []byte(strings.Replace(string(b), `"completion_reason": "completed"`, `"completion_reason": ""`, 1)), 0o600)
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
	if o := runWith(busy); o.code != 0 {
		t.Fatalf("busy: exit %d %s", o.code, o.stderr)
	}
	lk, err := state.Lock(busy)
	if err != nil {
		t.Fatal(err)
	}
	if o := runWith(busy); o.code != 2 || !strings.Contains(o.stderr, "another ensemble process") {
		t.Fatalf("locked: exit %d %s", o.code, o.stderr)
	}
	if o := ensembleCmd(t, "", "resume", busy); o.code != 2 || !strings.Contains(o.stderr, "another ensemble process") {
		t.Fatalf("resume of a locked file: exit %d %s", o.code, o.stderr)
	}
	lk.Unlock()
	if o := ensembleCmd(t, "", "resume", unfinished); o.code != 0 {
		t.Fatalf("a resume of a finished run: exit %d %s", o.code, o.stderr)
	}
	// Locks leave nothing beside the files they lock, even where a run
	// was refused.
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if name := e.Name(); name != "notes.txt" && name != "one.json" && name != "unfinished.json" && name != "busy.json" {
			t.Errorf("left behind: %s", name)
		}
	}
}

// A symbolic link to a state file is that state file: a run holding one
// excludes a run through the other, and saves leave the link in place.
func TestStateFileThroughASymlink(t *testing.T) {
	t.Parallel()
	ex := "../../examples/writer-reviewer/"
	dir := t.TempDir()
	sp, link := filepath.Join(dir, "m.json"), filepath.Join(dir, "link-to-m.json")
	if err := os.Symlink("m.json", link); err != nil {
		t.Fatal(err)
	}
	// Through the link, to a file that does not exist yet.
	o := ensembleCmd(t, "", "run", ex+"ensemble.yaml", "--responses", ex+"responses.yaml", "--output", "json", "--state", link, "--max-turns", "2")
	if o.code != 3 {
		t.Fatalf("exit %d %s", o.code, o.stderr)
	}
	lk, err := state.Lock(sp)
	if err != nil {
		t.Fatal(err)
	}
	if o := ensembleCmd(t, "", "resume", link, "--max-turns", "20", "--output", "json"); o.code != 2 || !strings.Contains(o.stderr, "another ensemble process") {
		t.Fatalf("resume through the link of a locked file: exit %d %s", o.code, o.stderr)
	}
	lk.Unlock()
	if o := ensembleCmd(t, "", "resume", link, "--max-turns", "20", "--output", "json"); o.code != 0 {
		t.Fatalf("resume through the link: exit %d %s", o.code, o.stderr)
	}
	if fi, err := os.Lstat(link); err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Fatalf("the link was replaced by a file: %v %v", fi, err)
	}
	if sf, err := state.Load(sp); err != nil || sf.CompletionReason != "completed" {
		t.Fatalf("the file behind the link: %v %v", sf, err)
	}
}
