package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/ensemble-run/ensemble/state"
)

// Several runs in one database: resume and state show need --run-id when
// the run is ambiguous and list the ids; state show prints the result the
// run printed, state export a JSON state file that resumes to the same
// result, state list every run.
func TestStateDatabaseOfSeveralRuns(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	db := filepath.Join(dir, "runs.db")
	unfinished(t, db, "alpha")
	unfinished(t, db, "beta")

	if o := ensembleCmd(t, "", "resume", db); o.code != 2 || !strings.Contains(o.stderr, "holds 2 unfinished runs; name one with --run-id") ||
		!strings.Contains(o.stderr, "  alpha  (writer-reviewer, 0 turns, unfinished)") || !strings.Contains(o.stderr, "  beta  (") {
		t.Fatalf("an ambiguous resume: exit %d %s", o.code, o.stderr)
	}
	if o := ensembleCmd(t, "", "state", "show", db); o.code != 2 || !strings.Contains(o.stderr, "holds 2 runs; name one with --run-id") {
		t.Fatalf("an ambiguous show: exit %d %s", o.code, o.stderr)
	}
	if o := ensembleCmd(t, "", "state", "show", db, "--run-id", "beta", "--output", "text"); o.code != 0 ||
		!strings.Contains(o.stdout, "writer-reviewer: unfinished after 0 turns") || !strings.Contains(o.stdout, "it goes on with: ensemble resume "+db+" --run-id beta") {
		t.Fatalf("state show of an unfinished run: exit %d %s%s", o.code, o.stdout, o.stderr)
	}
	if o := ensembleCmd(t, "", "state", "show", db, "--run-id", "gamma"); o.code != 2 || !strings.Contains(o.stderr, `holds no run "gamma"`) {
		t.Fatalf("an unknown run: exit %d %s", o.code, o.stderr)
	}

	res := ensembleCmd(t, "", "resume", db, "--run-id", "alpha", "--output", "json")
	if res.code != 0 {
		t.Fatalf("resume: exit %d %s", res.code, res.stderr)
	}
	want := comparableResult(t, []byte(res.stdout))
	show := ensembleCmd(t, "", "state", "show", db, "--run-id", "alpha", "--output", "json")
	if show.code != 0 || comparableResult(t, []byte(show.stdout)) != want {
		t.Fatalf("state show: exit %d %s\n%s\nwant\n%s", show.code, show.stderr, show.stdout, want)
	}
	// With one unfinished run left, resume takes it.
	if o := ensembleCmd(t, "", "resume", db, "--output", "text"); o.code != 0 || !strings.Contains(o.stderr, "resuming run beta of "+db) {
		t.Fatalf("resume of the one unfinished run: exit %d %s", o.code, o.stderr)
	}
	text := ensembleCmd(t, "", "state", "show", db, "--run-id", "beta", "--output", "text")
	if text.code != 0 || !strings.Contains(text.stdout, "writer-reviewer: ") || !strings.Contains(text.stdout, "final state:") {
		t.Fatalf("state show --output text: exit %d %s%s", text.code, text.stdout, text.stderr)
	}

	export := ensembleCmd(t, "", "state", "export", db, "--run-id", "alpha")
	if export.code != 0 {
		t.Fatalf("state export: exit %d %s", export.code, export.stderr)
	}
	sf, err := state.Parse([]byte(export.stdout))
	if err != nil || sf.CompletionReason != "completed" {
		t.Fatalf("the export is not a finished run's state file: %v", err)
	}
	js := filepath.Join(dir, "alpha.json")
	if err := os.WriteFile(js, []byte(export.stdout), 0o600); err != nil {
		t.Fatal(err)
	}
	again := ensembleCmd(t, "", "resume", js, "--output", "json")
	if again.code != 0 || comparableResult(t, []byte(again.stdout)) != want {
		t.Fatalf("resume of the export: exit %d %s", again.code, again.stderr)
	}

	list := ensembleCmd(t, "", "state", "list", db)
	lines := strings.Split(strings.TrimSpace(list.stdout), "\n")
	if list.code != 0 || len(lines) != 3 || !strings.HasPrefix(lines[0], "ID ") || !strings.HasPrefix(lines[1], "alpha ") ||
		!strings.Contains(lines[1], "completed") || !strings.HasPrefix(lines[2], "beta ") {
		t.Fatalf("state list: exit %d\n%s%s", list.code, list.stdout, list.stderr)
	}
	var runs []map[string]any
	list = ensembleCmd(t, "", "state", "list", db, "--output", "json")
	if err := json.Unmarshal([]byte(list.stdout), &runs); err != nil || len(runs) != 2 || runs[1]["id"] != "beta" {
		t.Fatalf("state list --output json: %v\n%s", err, list.stdout)
	}
	list = ensembleCmd(t, "", "state", "list", js)
	if list.code != 0 || !strings.Contains(list.stdout, "\n-  ") {
		t.Fatalf("state list of a JSON state file: exit %d\n%s%s", list.code, list.stdout, list.stderr)
	}
	for _, args := range [][]string{{"state", "show", db, "--run-id", "alpha", "--output", "jsonl"}, {"state", "show", js, "--run-id", "x"}} {
		if o := ensembleCmd(t, "", args...); o.code != 2 {
			t.Errorf("%v: exit %d %s", args, o.code, o.stderr)
		}
	}
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if name := e.Name(); name != "runs.db" && name != "alpha.json" {
			t.Errorf("left behind: %s", name)
		}
	}
}

// --run-id needs --state and a name a person can type back; a new run
// prints its id with text output; ENSEMBLE_STATE_SYNC picks the sync mode.
func TestRunIDAndSyncFlags(t *testing.T) {
	t.Parallel()
	ex := "../../examples/writer-reviewer/"
	dir := t.TempDir()
	runArgs := func(extra ...string) []string {
		return append([]string{"run", ex + "ensemble.yaml", "--responses", ex + "responses.yaml"}, extra...)
	}
	for _, tc := range []struct {
		args []string
		msg  string
	}{
		{runArgs("--run-id", "x"), "--run-id needs --state (or --temporal)"},
		{runArgs("--run-id", "a b", "--state", filepath.Join(dir, "x.db")), "a run id is 1 to 100 letters"},
	} {
		if o := ensembleCmd(t, "", tc.args...); o.code != 2 || !strings.Contains(o.stderr, tc.msg) {
			t.Errorf("%v: exit %d %s", tc.args, o.code, o.stderr)
		}
	}
	db := filepath.Join(dir, "sync.db")
	o := ensembleEnv(t, map[string]string{"ENSEMBLE_STATE_SYNC": "full"}, runArgs("--state", db, "--output", "text")...)
	if o.code != 0 || !strings.HasPrefix(o.stderr, "ensemble: run ") || !strings.Contains(o.stderr, ", saved in "+db) {
		t.Fatalf("ENSEMBLE_STATE_SYNC=full: exit %d %s", o.code, o.stderr)
	}
	bad := map[string]string{"ENSEMBLE_STATE_SYNC": "sometimes"}
	for _, args := range [][]string{runArgs("--state", db), {"resume", db}} {
		if o := ensembleEnv(t, bad, args...); o.code != 2 || !strings.Contains(o.stderr, "ENSEMBLE_STATE_SYNC must be normal or full") {
			t.Fatalf("%v with a bad ENSEMBLE_STATE_SYNC: exit %d %s", args, o.code, o.stderr)
		}
	}
	// What only reads a run writes nothing: the variable is not its business.
	for _, args := range [][]string{{"state", "list", db}, {"state", "show", db}} {
		if o := ensembleEnv(t, bad, args...); o.code != 0 {
			t.Errorf("%v with a bad ENSEMBLE_STATE_SYNC: exit %d %s", args, o.code, o.stderr)
		}
	}
	if fi, err := os.Stat(db); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("the database's mode: %v %v", fi.Mode(), err)
	}
}

// Runs of one database written at the same time by several runs (here in
// one process, each with its own connection) all end complete: their
// writers take turns on the database, a transaction at a time.
func TestConcurrentRunsOfOneDatabase(t *testing.T) {
	t.Parallel()
	ex := "../../examples/writer-reviewer/"
	db := filepath.Join(t.TempDir(), "runs.db")
	ids := []string{"r1", "r2", "r3"}
	outs := make([]outcome, len(ids))
	var wg sync.WaitGroup
	for i, id := range ids {
		wg.Add(1)
		go func() {
			defer wg.Done()
			outs[i] = ensembleCmd(t, "", "run", ex+"ensemble.yaml", "--responses", ex+"responses.yaml", "--output", "json", "--state", db, "--run-id", id)
		}()
	}
	wg.Wait()
	for i, o := range outs {
		if o.code != 0 {
			t.Fatalf("run %s: exit %d %s", ids[i], o.code, o.stderr)
		}
		show := ensembleCmd(t, "", "state", "show", db, "--run-id", ids[i], "--output", "json")
		if show.code != 0 || comparableResult(t, []byte(show.stdout)) != comparableResult(t, []byte(o.stdout)) {
			t.Fatalf("run %s: state show differs from what the run printed:\n%s\n%s", ids[i], show.stdout, show.stderr)
		}
	}
}
