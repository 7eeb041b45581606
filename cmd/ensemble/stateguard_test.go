package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ensemble-run/ensemble/durable"
	"github.com/ensemble-run/ensemble/state"
	"github.com/ensemble-run/ensemble/store"
)

// TestStateFileIsNeverClobbered: a new run does not overwrite a file that
// is not a state file, nor a JSON state file holding an unfinished run, nor
// a run of a database that has not finished, nor one that another process
// is writing; it does replace a finished run's. Another run of the same
// database goes on meanwhile. No lock file is left beside any of them.
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

	// A JSON state file (state export) holding an unfinished run; counts
	// in messages agree with their number.
	db := filepath.Join(dir, "runs.db")
	if o := runWith(db, "--max-turns", "1", "--run-id", "one"); o.code != 3 {
		t.Fatalf("one turn: exit %d %s", o.code, o.stderr)
	}
	one := filepath.Join(dir, "one.json")
	b := exportState(t, db, "one")
	os.WriteFile(one, []byte(strings.Replace(string(b), `"completion_reason": "max_total_turns"`, `"completion_reason": ""`, 1)), 0o600)
	if o := runWith(one); o.code != 2 || !strings.Contains(o.stderr, "has not finished (1 turn done)") || !strings.Contains(o.stderr, "ensemble resume "+one) {
		t.Fatalf("one turn done: exit %d %s", o.code, o.stderr)
	}
	if o := ensembleCmd(t, "", "resume", one, "--output", "json", "--max-turns", "20"); o.code != 0 {
		t.Fatalf("resume of a JSON state file: exit %d %s", o.code, o.stderr)
	}
	if sf := readState(t, one); sf.CompletionReason != "completed" || bytes.HasPrefix(sf.raw, []byte(store.Header)) {
		t.Fatalf("the JSON state file after its resume: %q", sf.CompletionReason)
	}
	// Finished now: a new run may replace it (as JSON).
	if o := runWith(one); o.code != 0 {
		t.Fatalf("over a finished run: exit %d %s", o.code, o.stderr)
	}

	// A run of the database that has not finished (killed before its first
	// turn ended): its id is not taken.
	unfinished(t, db, "killed")
	if o := runWith(db, "--run-id", "killed"); o.code != 2 || !strings.Contains(o.stderr, "ensemble resume "+db+" --run-id killed") ||
		!strings.Contains(o.stderr, "has not finished (0 turns done)") {
		t.Fatalf("unfinished run: exit %d %s", o.code, o.stderr)
	}
	// A run being written by another process: neither a resume nor a new
	// run with its id goes on; another run of the database does.
	sdb, err := store.Open(db, false, "")
	if err != nil {
		t.Fatal(err)
	}
	run, err := sdb.Run("killed")
	if err != nil {
		t.Fatal(err)
	}
	if err := sdb.Lock(run); err != nil {
		t.Fatal(err)
	}
	for _, o := range []outcome{ensembleCmd(t, "", "resume", db, "--run-id", "killed"), ensembleCmd(t, "", "resume", db), runWith(db, "--run-id", "killed")} {
		if o.code != 2 || !strings.Contains(o.stderr, "another ensemble process") || !strings.Contains(o.stderr, "run killed") {
			t.Fatalf("a locked run: exit %d %s", o.code, o.stderr)
		}
	}
	if o := runWith(db, "--run-id", "other"); o.code != 0 {
		t.Fatalf("another run of a database with a locked run: exit %d %s", o.code, o.stderr)
	}
	sdb.Close()
	if o := ensembleCmd(t, "", "resume", db, "--output", "json", "--timeout", "1m"); o.code != 0 {
		t.Fatalf("resume: exit %d %s", o.code, o.stderr)
	}
	if o := runWith(db, "--run-id", "killed"); o.code != 0 {
		t.Fatalf("over a finished run: exit %d %s", o.code, o.stderr)
	}
	// Every run of the database finished: resume needs --run-id.
	if o := ensembleCmd(t, "", "resume", db); o.code != 2 || !strings.Contains(o.stderr, "none unfinished; name one with --run-id") ||
		!strings.Contains(o.stderr, "  killed  (writer-reviewer, ") {
		t.Fatalf("resume of a database of finished runs: exit %d %s", o.code, o.stderr)
	}
	// Locks leave nothing beside the files they lock, even where a run
	// was refused.
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if name := e.Name(); name != "notes.txt" && name != "one.json" && name != "runs.db" {
			t.Errorf("left behind: %s", name)
		}
	}
}

// unfinished adds to the database at path a run of writer-reviewer that
// was killed before its first turn ended.
func unfinished(t *testing.T, path, id string) {
	t.Helper()
	ref := func(name string) *state.FileRef {
		p, err := filepath.Abs("../../examples/writer-reviewer/" + name)
		if err != nil {
			t.Fatal(err)
		}
		sum, err := state.HashFile(p)
		if err != nil {
			t.Fatal(err)
		}
		return &state.FileRef{Path: p, SHA256: sum}
	}
	ens := ref("ensemble.yaml")
	ens.Name = "writer-reviewer"
	db, err := store.Open(path, true, "")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	w, err := db.Create(id, &state.File{Ensemble: *ens, Responses: ref("responses.yaml"), State: state.New("")},
		func(s string) string { return s })
	if err != nil {
		t.Fatal(err)
	}
	w.Close()
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
	saved, err := durable.Open(sp, "", store.SyncNormal) // locks the one unfinished run
	if err != nil {
		t.Fatal(err)
	}
	if o := ensembleCmd(t, "", "resume", link, "--max-turns", "20", "--output", "json"); o.code != 2 || !strings.Contains(o.stderr, "another ensemble process") {
		t.Fatalf("resume through the link of a locked file: exit %d %s", o.code, o.stderr)
	}
	saved.Close()
	if o := ensembleCmd(t, "", "resume", link, "--max-turns", "20", "--output", "json"); o.code != 0 {
		t.Fatalf("resume through the link: exit %d %s", o.code, o.stderr)
	}
	if fi, err := os.Lstat(link); err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Fatalf("the link was replaced by a file: %v %v", fi, err)
	}
	if sf := readState(t, sp); sf.CompletionReason != "completed" {
		t.Fatalf("the file behind the link: %q", sf.CompletionReason)
	}
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if name := e.Name(); name != "m.json" && name != "link-to-m.json" {
			t.Errorf("left behind: %s", name)
		}
	}
}
