package bdd

import (
	"math"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ensemble-run/ensemble/store"
)

// The statistics of a judge's agreement with its labels, against values
// worked by hand. With n labels, po = (tp+tn)/n is the observed
// agreement, pe = ((tp+fp)(tp+fn) + (tn+fn)(tn+fp))/n² the agreement
// expected by chance from the two marginals, kappa = (po-pe)/(1-pe),
// TPR = tp/(tp+fn) and FPR = fp/(fp+tn); NaN below stands for undefined.
func TestAgreement(t *testing.T) {
	t.Parallel()
	undef := math.NaN()
	for _, c := range []struct {
		name                string
		tp, fp, tn, fn      int
		po, kappa, tpr, fpr float64
	}{
		// po = 4/5 = 0.8; pe = (4·3 + 1·2)/25 = 14/25 = 0.56;
		// kappa = 0.24/0.44 = 6/11 = 0.545454…; TPR 3/3; FPR 1/2.
		{"one false positive", 3, 1, 1, 0, 0.8, 6.0 / 11, 1, 0.5},
		// The textbook case of 50 items (20 both yes, 5 judge yes only,
		// 10 label yes only, 15 both no): po = 35/50 = 0.7; pe =
		// 0.5·0.6 + 0.5·0.4 = 0.5; kappa = 0.2/0.5 = 0.4; TPR = 20/30;
		// FPR = 5/20.
		{"fifty items", 20, 5, 15, 10, 0.7, 0.4, 2.0 / 3, 0.25},
		// Full agreement: po = 1, pe = (2·2 + 2·2)/16 = 0.5, kappa = 1.
		{"full agreement", 2, 0, 2, 0, 1, 1, 1, 0},
		// Full disagreement: po = 0, pe = 0.5, kappa = -0.5/0.5 = -1.
		{"full disagreement", 0, 2, 0, 2, 0, -1, 0, 1},
		// Chance: po = 0.5 = pe, kappa = 0.
		{"chance", 1, 1, 1, 1, 0.5, 0, 0.5, 0.5},
		// Every label and verdict pass: pe = 16/16 = 1, kappa undefined;
		// no label fail, FPR undefined.
		{"all pass", 4, 0, 0, 0, 1, undef, 1, undef},
		// Every verdict fails, every label passes: pe = (0·3 + 3·0)/9 = 0,
		// kappa = 0; TPR 0/3; FPR undefined.
		{"the judge fails what people pass", 0, 0, 0, 3, 0, 0, 0, undef},
		{"no labels", 0, 0, 0, 0, undef, undef, undef, undef},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			a := agreement(c.tp, c.fp, c.tn, c.fn)
			if a.Labels != c.tp+c.fp+c.tn+c.fn {
				t.Errorf("labels %d", a.Labels)
			}
			for _, s := range []struct {
				what string
				got  *float64
				want float64
			}{{"agreement", a.Agreed, c.po}, {"kappa", a.Kappa, c.kappa}, {"TPR", a.TPR, c.tpr}, {"FPR", a.FPR, c.fpr}} {
				switch {
				case math.IsNaN(s.want):
					if s.got != nil {
						t.Errorf("%s: %v, want undefined", s.what, *s.got)
					}
				case s.got == nil:
					t.Errorf("%s: undefined, want %v", s.what, s.want)
				case math.Abs(*s.got-s.want) > 1e-12:
					t.Errorf("%s: %v, want %v", s.what, *s.got, s.want)
				}
			}
		})
	}
}

// Calibrate groups the verdicts of every test run by judge step (its text
// and rubric), counts only the labelled ones, and says so of a judge with
// no labels; a database without verdicts, or a JSON file, is refused.
func TestCalibrate(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "tests.db")
	db, err := store.Open(path, true, store.SyncNormal)
	if err != nil {
		t.Fatal(err)
	}
	tr, _ := db.CreateTestRun("t1", nil)
	if err := db.SaveTestResult(tr, &store.TestResult{Scenario: "s", Repeat: 1, Status: store.TestPassed}); err != nil {
		t.Fatal(err)
	}
	step := func(agent string) string { return `the judge "q" scores agent "` + agent + `" at least 4` }
	vs := []*store.Verdict{
		{Judge: "q", Step: step("w"), Rubric: "R1", Passed: true},
		{Judge: "q", Step: step("w"), Rubric: "R1", Passed: true},
		{Judge: "q", Step: step("w"), Rubric: "R1", Passed: false},
		{Judge: "q", Step: step("w"), Rubric: "R2", Passed: false}, // another rubric: another judge
		{Judge: "q", Step: step("e"), Rubric: "R1", Passed: true},
	}
	if err := db.SaveVerdicts(tr, vs); err != nil {
		t.Fatal(err)
	}
	for id, l := range map[string]string{"t1.r1.j1": "pass", "t1.r1.j2": "fail", "t1.r1.j3": "fail", "t1.r1.j4": "pass"} {
		if _, err := db.LabelVerdict(id, l); err != nil {
			t.Fatal(err)
		}
	}
	db.Close()
	c, err := Calibrate(path, "")
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Judges) != 3 {
		t.Fatalf("judges: %+v", c.Judges)
	}
	w, w2, e := c.Judges[0], c.Judges[1], c.Judges[2]
	if w.Rubric != "R1" || w.Verdicts != 3 || w.Labels != 3 || w.TruePositives != 1 || w.FalsePositives != 1 || w.TrueNegatives != 1 || *w.TPR != 1 || *w.FPR != 0.5 {
		t.Errorf("the writer's judge: %+v", w)
	}
	if w2.Rubric != "R2" || w2.Labels != 1 || w2.FalseNegatives != 1 || e.Labels != 0 || e.Verdicts != 1 || e.Kappa != nil {
		t.Errorf("the others: %+v %+v", w2, e)
	}
	var b strings.Builder
	if err := c.WriteText(&b); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"3 verdicts, 3 labels (0 unlabelled)", "agreement 0.67 (2 of 3), Cohen's kappa 0.40",
		"true positive rate 1.00 (1 of 1 labelled pass), false positive rate 0.50 (1 of 2 labelled fail)", "1 verdict, no labels"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("the text lacks %q:\n%s", want, b.String())
		}
	}
	if _, err := Calibrate(path, "nope"); err == nil || !strings.Contains(err.Error(), "--test-run") {
		t.Errorf("an unknown test run: %v", err)
	}
	empty := filepath.Join(t.TempDir(), "empty.db")
	db2, _ := store.Open(empty, true, store.SyncNormal)
	db2.Close()
	if _, err := Calibrate(empty, ""); err == nil || !strings.Contains(err.Error(), "no judge verdicts") {
		t.Errorf("a database without verdicts: %v", err)
	}
}
