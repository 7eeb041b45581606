package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ensemble-run/ensemble/internal/bdd"
	"github.com/ensemble-run/ensemble/store"
)

// judgedFiles are an ensemble whose writer is judged twice per run of its
// feature (repeated): the judge passes the first run and fails the second.
var judgedFiles = map[string]string{
	"e.yaml": "name: judged\ninput: Sales figures for Q3\nmodels:\n  small: {provider: ollama, model: fake-model, base_url: \"http://127.0.0.1:9/v1\"}\n" +
		"agents:\n  - name: writer\n    model_profile: small\n    prompt: Write the report.\n",
	"judged.feature": `Feature: Judged
  Scenario Outline: The report <n>
    Given the ensemble "e.yaml"
    And the judge "quality" uses model profile "small" with the rubric:
      """
      Score the report from 1 to 5.
      """
    And agent "quality" responds "{\"score\": <score>, \"reason\": \"<reason>\"}"
    And agent "writer" responds "EMEA grew 12% in Q3."
    When the ensemble runs
    Then the judge "quality" scores agent "writer" at least 4 on a scale of 1 to 5

    Examples:
      | n | score | reason     |
      | 1 | 5     | names EMEA |
      | 2 | 2     | too short  |
      | 3 | 4     | fine       |
`,
}

// test calibrate on a test run saved by test --state whose verdicts a
// person labelled: the judge step's labels, kappa and rates in text and
// JSON; before any label it says there is none; a database without
// verdicts, a missing file and a bad --output are usage errors.
func TestTestCalibrate(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	for name, body := range judgedFiles {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	db := filepath.Join(t.TempDir(), "tests.db")
	if o := ensembleCmd(t, "", "test", dir, "--state", db); o.code != 1 || !strings.Contains(o.stderr, "saved test run") {
		t.Fatalf("test --state: exit %d\n%s\n%s", o.code, o.stdout, o.stderr)
	}
	o := ensembleCmd(t, "", "test", "calibrate", db)
	if o.code != 0 || !strings.Contains(o.stdout, `Then the judge "quality" scores agent "writer" at least 4 on a scale of 1 to 5`) ||
		!strings.Contains(o.stdout, "3 verdicts, no labels") {
		t.Fatalf("before any label: exit %d\n%s\n%s", o.code, o.stdout, o.stderr)
	}
	// A person accepts rows 1 and 2 (pass, fail) and overrides row 3: the
	// judge passed it, the person fails it. tp 1, tn 1, fp 1, fn 0:
	// po = 2/3, pe = (2·1 + 1·2)/9 = 4/9, kappa = (2/9)/(5/9) = 0.4;
	// TPR = 1/1; FPR = 1/2.
	s, err := store.Open(db, false, store.SyncNormal)
	if err != nil {
		t.Fatal(err)
	}
	vs, err := s.AllVerdicts()
	if err != nil || len(vs) != 3 {
		t.Fatalf("verdicts: %v, %v", vs, err)
	}
	for _, v := range vs {
		if _, err := s.LabelVerdict(v.ID, store.LabelFail); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.LabelVerdict(vs[0].ID, store.LabelPass); err != nil {
		t.Fatal(err)
	}
	s.Close()
	o = ensembleCmd(t, "", "test", "calibrate", db)
	for _, want := range []string{"3 verdicts, 3 labels (0 unlabelled)", "agreement 0.67 (2 of 3), Cohen's kappa 0.40",
		"true positive rate 1.00 (1 of 1 labelled pass), false positive rate 0.50 (1 of 2 labelled fail)"} {
		if o.code != 0 || !strings.Contains(o.stdout, want) {
			t.Errorf("exit %d: the text lacks %q:\n%s%s", o.code, want, o.stdout, o.stderr)
		}
	}
	o = ensembleCmd(t, "", "test", "calibrate", db, "--output", "json", "--test-run", vs[0].TestRun)
	var c bdd.Calibration
	if err := json.Unmarshal([]byte(o.stdout), &c); err != nil || o.code != 0 || len(c.Judges) != 1 {
		t.Fatalf("--output json: exit %d, %v\n%s%s", o.code, err, o.stdout, o.stderr)
	}
	if j := c.Judges[0]; j.Judge != "quality" || j.Labels != 3 || j.Kappa == nil || *j.Kappa < 0.4-1e-9 || *j.Kappa > 0.4+1e-9 || *j.TPR != 1 || *j.FPR != 0.5 || j.Rubric != "Score the report from 1 to 5." {
		t.Errorf("the judge in JSON: %+v", j)
	}
	empty := filepath.Join(t.TempDir(), "empty.db")
	if s, err := store.Open(empty, true, store.SyncNormal); err != nil {
		t.Fatal(err)
	} else {
		s.Close()
	}
	for _, c := range []struct {
		name string
		args []string
		want string
	}{
		{"no verdicts", []string{empty}, "holds no judge verdicts"},
		{"no such file", []string{filepath.Join(dir, "nope.db")}, "nope.db"},
		{"an unknown test run", []string{db, "--test-run", "nope"}, "--test-run"},
		{"a bad output", []string{db, "--output", "yaml"}, "--output must be text or json"},
	} {
		o := ensembleCmd(t, "", append([]string{"test", "calibrate"}, c.args...)...)
		if o.code != 2 || !strings.Contains(o.stderr, c.want) {
			t.Errorf("%s: exit %d, want 2 and %q: %s", c.name, o.code, c.want, o.stderr)
		}
	}
}
