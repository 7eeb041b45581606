package main

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/ensemble-run/ensemble/store"
)

// test --state saves the scenario runs under a test run and says where;
// the report on stdout is the one without it.
func TestTestStateSavesATestRun(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "tests.db")
	plain := ensembleCmd(t, "", "test", gherkinDir+"pass")
	o := ensembleCmd(t, "", "test", "--state", path, gherkinDir+"pass")
	if o.code != 0 || !strings.Contains(o.stderr, "saved test run ") || !strings.Contains(o.stderr, path) {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", o.code, o.stdout, o.stderr)
	}
	if strip := func(s string) string { return s[:strings.LastIndex(s, "scenarios")] }; strip(o.stdout) != strip(plain.stdout) {
		t.Errorf("the report with --state:\n%s\nwithout:\n%s", o.stdout, plain.stdout)
	}
	db, err := store.Open(path, false, store.SyncNormal)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	trs, err := db.TestRuns()
	if err != nil || len(trs) != 1 || trs[0].Results != 2 || trs[0].Passed != 2 || trs[0].Status != "passed" {
		t.Fatalf("test runs: %+v, %v", trs, err)
	}
	results, err := db.TestResults(trs[0])
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range results {
		if info, err := db.Run(r.Run); err != nil || info.CompletionReason == "" {
			t.Errorf("result %+v: its run %+v, %v", r, info, err)
		}
	}
	if o := ensembleCmd(t, "", "test", "--state", "", gherkinDir+"pass"); o.code != 2 || !strings.Contains(o.stderr, "--state needs a file name") {
		t.Errorf("--state with no file: exit %d, %s", o.code, o.stderr)
	}
}
