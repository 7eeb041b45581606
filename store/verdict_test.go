package store_test

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ensemble-run/ensemble/store"
)

// The verdicts of a result's judge steps are kept with it, in order, with
// stable ids; a label given later is read back, replaced by a new one, and
// refused for an unknown verdict or an unknown label.
func TestVerdictsRoundTrip(t *testing.T) {
	t.Parallel()
	db, err := store.Open(filepath.Join(t.TempDir(), "runs.db"), true, store.SyncNormal)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if vs, err := db.AllVerdicts(); err != nil || len(vs) != 0 {
		t.Fatalf("a database without verdicts: %v, %v", vs, err)
	}
	tr, err := db.CreateTestRun("t1", nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := db.SaveVerdicts(tr, []*store.Verdict{{Judge: "q"}}); err == nil {
		t.Error("verdicts before any result were saved")
	}
	for i := range 2 {
		if err := db.SaveTestResult(tr, &store.TestResult{Scenario: "s", Repeat: i + 1, Status: store.TestPassed}); err != nil {
			t.Fatal(err)
		}
	}
	long := strings.Repeat("é", 20000)
	saved := []*store.Verdict{
		{Judge: "quality", Agent: "writer", Step: `the judge "quality" scores agent "writer" at least 4 on a scale of 1 to 5`, Rubric: "Score 1 to 5.", Score: 4.5, Threshold: "4", Scale: "1 to 5", Passed: true, Reason: "clear"},
		{Judge: "quality", Agent: "editor", Step: `the judge "quality" scores agent "editor" at least 4`, Rubric: long, Score: 2, Threshold: "4", Passed: false},
	}
	if err := db.SaveVerdicts(tr, saved); err != nil {
		t.Fatal(err)
	}
	vs, err := db.Verdicts(tr)
	if err != nil || len(vs) != 2 {
		t.Fatalf("verdicts: %v, %v", vs, err)
	}
	w, e := vs[0], vs[1]
	if w.ID != "t1.r2.j1" || e.ID != "t1.r2.j2" || w.Result != 1 || w.Judge != "quality" || w.Agent != "writer" || w.Score != 4.5 ||
		!w.Passed || w.Reason != "clear" || w.Scale != "1 to 5" || w.Threshold != "4" || w.Label != "" || !w.Labelled.IsZero() || w.TestRun != "t1" {
		t.Errorf("the first verdict read back: %+v", w)
	}
	if e.Passed || e.Score != 2 || !strings.HasSuffix(e.Rubric, "…") || len(e.Rubric) > 17000 || !strings.HasPrefix(e.Rubric, "éé") {
		t.Errorf("the second verdict read back: passed %v score %v rubric of %d bytes", e.Passed, e.Score, len(e.Rubric))
	}
	for _, c := range []struct{ label, want string }{{store.LabelFail, store.LabelFail}, {store.LabelPass, store.LabelPass}} {
		v, err := db.LabelVerdict("t1.r2.j1", c.label)
		if err != nil || v.Label != c.want || v.Labelled.IsZero() {
			t.Errorf("label %s: %+v, %v", c.label, v, err)
		}
	}
	if _, err := db.LabelVerdict("t1.r9.j1", store.LabelPass); !errors.Is(err, store.ErrNoVerdict) {
		t.Errorf("an unknown verdict: %v", err)
	}
	if _, err := db.LabelVerdict("t1.r2.j1", "maybe"); err == nil {
		t.Error("the label maybe was taken")
	}
	all, err := db.AllVerdicts()
	if err != nil || len(all) != 2 || all[0].Label != store.LabelPass || all[1].Label != "" {
		t.Errorf("all verdicts: %+v, %v", all, err)
	}
}
