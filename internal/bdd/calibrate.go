package bdd

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/ensemble-run/ensemble/durable"
	"github.com/ensemble-run/ensemble/store"
)

// Calibration (`test calibrate`, docs/testing.md#judge-review): how well
// each judge step agrees with the labels people gave its verdicts in the
// inspector, the label being the truth: Cohen's kappa (agreement beyond
// chance), the true positive rate (of the outputs people passed, the
// share the judge passed) and the false positive rate (of those people
// failed, the share the judge passed).

// Agreement is a judge's agreement with the labels: the counts of its
// labelled verdicts by the judge's verdict and the label, and the
// statistics drawn from them; nil where they are undefined (no labels, a
// kappa whose chance agreement is 1, a rate with no label to divide by).
type Agreement struct {
	Labels         int      `json:"labels"`
	TruePositives  int      `json:"true_positives"`  // the judge passed, the label passed
	FalsePositives int      `json:"false_positives"` // the judge passed, the label failed
	TrueNegatives  int      `json:"true_negatives"`  // the judge failed, the label failed
	FalseNegatives int      `json:"false_negatives"` // the judge failed, the label passed
	Agreed         *float64 `json:"agreement"`
	Kappa          *float64 `json:"kappa"`
	TPR            *float64 `json:"true_positive_rate"`
	FPR            *float64 `json:"false_positive_rate"`
}

// agreement computes the statistics of the counts tp, fp, tn, fn.
func agreement(tp, fp, tn, fn int) Agreement {
	a := Agreement{Labels: tp + fp + tn + fn, TruePositives: tp, FalsePositives: fp, TrueNegatives: tn, FalseNegatives: fn}
	ratio := func(x, y int) *float64 {
		if y == 0 {
			return nil
		}
		r := float64(x) / float64(y)
		return &r
	}
	n := float64(a.Labels)
	if a.Labels > 0 {
		po := float64(tp+tn) / n
		pe := (float64(tp+fp)*float64(tp+fn) + float64(tn+fn)*float64(tn+fp)) / (n * n)
		a.Agreed = &po
		if pe < 1 {
			k := (po - pe) / (1 - pe)
			a.Kappa = &k
		}
	}
	a.TPR, a.FPR = ratio(tp, tp+fn), ratio(fp, fp+tn)
	return a
}

// JudgeCalibration is one judge step (its text and rubric) across the
// verdicts of a database's test runs.
type JudgeCalibration struct {
	Judge    string `json:"judge"`
	Step     string `json:"step"`
	Rubric   string `json:"rubric"`
	Verdicts int    `json:"verdicts"`
	Agreement
}

// Calibration is the judges of a state database, in the order their first
// verdict was saved.
type Calibration struct {
	Database string              `json:"database"`
	TestRun  string              `json:"test_run,omitempty"`
	Judges   []*JudgeCalibration `json:"judges"`
}

// Calibrate reads the judge verdicts and labels of the state database at
// path (of its test run testRun, when not "") and measures each judge
// step against its labels. A file that is not a state database, an
// unknown test run, and a database with no judge verdicts are errors of
// usage (ExitUsage).
func Calibrate(path, testRun string) (*Calibration, error) {
	if durable.IsJSONFile(path) {
		return nil, usagef("%s is a JSON state file: test calibrate reads the state database that test --state wrote", path)
	}
	db, err := store.Open(path, false, store.SyncNormal)
	if err != nil {
		return nil, usagef("%v", err)
	}
	defer db.Close()
	var vs []*store.Verdict
	if testRun != "" {
		tr, err := db.TestRun(testRun)
		if err != nil {
			return nil, usagef("--test-run: %v", err)
		}
		vs, err = db.Verdicts(tr)
		if err != nil {
			return nil, err
		}
	} else if vs, err = db.AllVerdicts(); err != nil {
		return nil, err
	}
	if len(vs) == 0 {
		where := "its test runs"
		if testRun != "" {
			where = "the test run " + testRun
		}
		return nil, usagef("%s holds no judge verdicts: %s have no judge step (Then the judge ... scores agent ...) that scored", path, where)
	}
	c := &Calibration{Database: path, TestRun: testRun, Judges: []*JudgeCalibration{}}
	type counts struct{ tp, fp, tn, fn int }
	at := map[string]int{}
	var cs []counts
	for _, v := range vs {
		key := v.Step + "\x00" + v.Rubric
		i, ok := at[key]
		if !ok {
			i = len(c.Judges)
			at[key] = i
			c.Judges = append(c.Judges, &JudgeCalibration{Judge: v.Judge, Step: v.Step, Rubric: v.Rubric})
			cs = append(cs, counts{})
		}
		c.Judges[i].Verdicts++
		switch {
		case v.Label == "":
		case v.Passed && v.Label == store.LabelPass:
			cs[i].tp++
		case v.Passed:
			cs[i].fp++
		case v.Label == store.LabelFail:
			cs[i].tn++
		default:
			cs[i].fn++
		}
	}
	for i, j := range c.Judges {
		j.Agreement = agreement(cs[i].tp, cs[i].fp, cs[i].tn, cs[i].fn)
	}
	return c, nil
}

// WriteJSON writes the calibration as one JSON document.
func (c *Calibration) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(c)
}

// WriteText writes the calibration for a person: each judge step, its
// rubric's first line, and its agreement with the labels.
func (c *Calibration) WriteText(w io.Writer) error {
	var b strings.Builder
	for i, j := range c.Judges {
		if i > 0 {
			b.WriteByte('\n')
		}
		rubric, _, more := strings.Cut(strings.TrimSpace(j.Rubric), "\n")
		if more || len(rubric) > 100 {
			rubric = cut(rubric, 100) + " …"
		}
		fmt.Fprintf(&b, "Then %s\n  rubric: %s\n", j.Step, rubric)
		if j.Labels == 0 {
			fmt.Fprintf(&b, "  %s, no labels: accept or override them on the test run's page in ui\n", plural(j.Verdicts, "verdict"))
			continue
		}
		fmt.Fprintf(&b, "  %s, %s (%d unlabelled)\n", plural(j.Verdicts, "verdict"), plural(j.Labels, "label"), j.Verdicts-j.Labels)
		fmt.Fprintf(&b, "  agreement %s (%d of %d), Cohen's kappa %s\n", stat(j.Agreed), j.TruePositives+j.TrueNegatives, j.Labels, stat(j.Kappa))
		fmt.Fprintf(&b, "  true positive rate %s (%d of %d labelled pass), false positive rate %s (%d of %d labelled fail)\n",
			stat(j.TPR), j.TruePositives, j.TruePositives+j.FalseNegatives, stat(j.FPR), j.FalsePositives, j.FalsePositives+j.TrueNegatives)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// stat is a statistic with two decimals, or n/a when it is undefined.
func stat(v *float64) string {
	if v == nil {
		return "n/a"
	}
	return fmt.Sprintf("%.2f", *v)
}
