package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A --report that is a file the run reads or writes is refused before the
// run, and the file is left as it was: the report would replace it.
func TestReportOverAReadFileIsRefused(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	files := map[string]string{}
	for _, name := range []string{"ensemble.yaml", "responses.yaml", "input.txt", "new.db"} {
		files[name] = filepath.Join(dir, name)
	}
	for name, text := range map[string]string{
		"ensemble.yaml":  "name: r\nagents:\n  - name: who\n    ask: Who?\n",
		"responses.yaml": "who: [\"me\"]\n",
	} {
		if err := os.WriteFile(files[name], []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(files["input.txt"], []byte("Q3"), 0o600); err != nil {
		t.Fatal(err)
	}
	args := []string{"run", files["ensemble.yaml"], "--responses", files["responses.yaml"], "--input-file", files["input.txt"], "--output", "json"}
	for _, tc := range []struct{ report, what string }{
		{files["ensemble.yaml"], "the ensemble file"},
		{dir + "/./responses.yaml", "the --responses file"},
		{files["input.txt"], "the --input-file file"},
		{files["new.db"], "the state file"}, // a new database, which the report would replace
	} {
		before, _ := os.ReadFile(tc.report)
		state := filepath.Join(dir, "runs.db")
		if tc.what == "the state file" {
			state = files["new.db"]
		}
		o := ensembleCmd(t, "", append(args, "--state", state, "--report", tc.report)...)
		want := "--report " + tc.report + " is " + tc.what + ": the report would overwrite it"
		if o.code != 2 || !strings.Contains(o.stderr, want) {
			t.Errorf("--report %s: exit %d %q, want %q", tc.report, o.code, o.stderr, want)
		}
		if after, _ := os.ReadFile(tc.report); !bytes.Equal(before, after) {
			t.Errorf("--report %s: the file changed", tc.report)
		}
	}
	db := filepath.Join(dir, "saved.db")
	if o := ensembleCmd(t, "", append(args, "--state", db)...); o.code != 0 {
		t.Fatalf("run: exit %d %s", o.code, o.stderr)
	}
	o := ensembleCmd(t, "", "resume", db, "--from-turn", "0", "--report", db, "--output", "json")
	if o.code != 2 || !strings.Contains(o.stderr, "--report "+db+" is the state file") {
		t.Errorf("resume: exit %d %q", o.code, o.stderr)
	}
	if o := ensembleCmd(t, "", "state", "list", db); o.code != 0 {
		t.Errorf("the state database is lost: exit %d %s", o.code, o.stderr)
	}
}
