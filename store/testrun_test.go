package store_test

import (
	"errors"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/ensemble-run/ensemble/store"
)

// A test run is kept beside the runs: its files, its results in order with
// the run each names, the counts by status, and how it ended; the run of a
// result finds its test run back.
func TestTestRuns(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "runs.db")
	db, err := store.Open(path, true, store.SyncNormal)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if trs, err := db.TestRuns(); err != nil || len(trs) != 0 {
		t.Fatalf("a new database: %v, %v", trs, err)
	}
	if tr, r, err := db.TestResultOf("x"); tr != nil || r != nil || err != nil {
		t.Fatalf("a run of no test run: %v %v %v", tr, r, err)
	}
	tr, err := db.CreateTestRun("t1", []string{"a.feature", "b.feature"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.CreateTestRun("t1", nil); !errors.Is(err, store.ErrTestRunExists) {
		t.Errorf("a second test run with the same id: %v", err)
	}
	if _, err := db.CreateTestRun("a b", nil); err == nil {
		t.Error("a test run id with a space was taken")
	}
	results := []*store.TestResult{
		{Run: "t1.1", Feature: "a.feature", Scenario: "ok", Line: 3, Repeat: 1, Status: store.TestPassed, Duration: 0.5},
		{Run: "t1.2", Feature: "a.feature", Scenario: "flaky <n>", Line: 7, Example: 2, Repeat: 1, Status: store.TestFailed, Step: `Then the output is "x"`, Message: "it is y", Duration: 1.25},
		{Feature: "b.feature", Scenario: "no ensemble", Line: 2, Repeat: 2, Status: store.TestCancelled},
	}
	for _, r := range results {
		if err := db.SaveTestResult(tr, r); err != nil {
			t.Fatal(err)
		}
	}
	if err := db.FinishTestRun(tr, "failed"); err != nil {
		t.Fatal(err)
	}
	trs, err := db.TestRuns()
	if err != nil || len(trs) != 1 {
		t.Fatalf("test runs: %v, %v", trs, err)
	}
	got := trs[0]
	if got.ID != "t1" || !reflect.DeepEqual(got.Files, []string{"a.feature", "b.feature"}) || got.Status != "failed" ||
		got.Results != 3 || got.Passed != 1 || got.Failed != 1 || got.Started.IsZero() || got.Finished.IsZero() {
		t.Errorf("the test run read back: %+v", got)
	}
	back, err := db.TestResults(got)
	if err != nil || !reflect.DeepEqual(back, results) {
		t.Errorf("results read back: %v, %v", back, err)
	}
	of, r, err := db.TestResultOf("t1.2")
	if err != nil || of == nil || of.ID != "t1" || !reflect.DeepEqual(r, results[1]) {
		t.Errorf("the test run of run t1.2: %+v %+v %v", of, r, err)
	}
	if _, err := db.TestRun("nope"); !errors.Is(err, store.ErrNoTestRun) {
		t.Errorf("an unknown test run: %v", err)
	}
	// A test run read back goes on numbering its results after the last.
	if err := db.SaveTestResult(got, &store.TestResult{Feature: "b.feature", Scenario: "more", Repeat: 1, Status: store.TestPassed}); err != nil {
		t.Fatal(err)
	}
}
