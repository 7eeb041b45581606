package bdd

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/ensemble-run/ensemble/store"
)

// judgedFeature judges the writer and the editor of judgedEnsemble: the
// writer's score passes, the editor's does not.
const judgedFeature = `Feature: Judged
  Scenario: The report is judged
    Given the ensemble "e.yaml"
    And the judge "quality" uses model profile "small" with the rubric:
      """
      Score the report from 1 to 5.
      """
    And agent "quality" responds "{\"score\": 5, \"reason\": \"names EMEA\"}"
    And agent "quality" responds "{\"score\": 2, \"reason\": \"names no region\"}"
    And agent "writer" responds "EMEA grew 12% in Q3."
    And agent "editor" responds "Q3 was fine."
    When the ensemble runs
    Then the judge "quality" scores agent "writer" at least 4 on a scale of 1 to 5
    And the judge "quality" scores agent "editor" at least 3
`

// A test run saved keeps each judge step's verdict with its scenario run:
// the step, the rubric, the agent, the score and whether it passed, the
// reason, under a stable id; with repeats, each repeat's.
func TestStateSavesJudgeVerdicts(t *testing.T) {
	t.Parallel()
	for _, repeat := range []int{0, 2} {
		dir := judgedEnsemble(t, "http://127.0.0.1:9/v1")
		writeFiles(t, dir, map[string]string{"judged.feature": judgedFeature})
		o := RunOptions{Paths: []string{filepath.Join(dir, "judged.feature")}, Options: Options{GuardModels: true}}
		if repeat > 0 {
			o.Repeats = Repeats{Repeat: repeat, Concurrency: 1, SaveBaseline: filepath.Join(t.TempDir(), "b.json")}
		}
		tr, results, db, _ := savedResults(t, o)
		vs, err := db.Verdicts(tr)
		if err != nil {
			t.Fatal(err)
		}
		if want := 2 * max(repeat, 1); len(vs) != want || len(results) != max(repeat, 1) {
			t.Fatalf("repeat %d: %d verdicts of %d results, want %d: %+v", repeat, len(vs), len(results), want, vs)
		}
		w, e := vs[0], vs[1]
		if w.ID != tr.ID+".r1.j1" || e.ID != tr.ID+".r1.j2" || w.Result != 0 || w.Judge != "quality" || w.Agent != "writer" ||
			w.Step != `the judge "quality" scores agent "writer" at least 4 on a scale of 1 to 5` || w.Rubric != "Score the report from 1 to 5." ||
			w.Score != 5 || !w.Passed || w.Reason != "names EMEA" || w.Scale != "1 to 5" || w.Threshold != "4" {
			t.Errorf("repeat %d: the writer's verdict: %+v", repeat, w)
		}
		if e.Agent != "editor" || e.Passed || e.Score != 2 || e.Step != `the judge "quality" scores agent "editor" at least 3` || e.Reason != "names no region" {
			t.Errorf("repeat %d: the editor's verdict: %+v", repeat, e)
		}
		if results[0].Status != store.TestFailed {
			t.Errorf("repeat %d: the result: %+v", repeat, results[0])
		}
		if repeat > 0 && vs[2].ID != tr.ID+".r2.j1" {
			t.Errorf("the second repeat's first verdict: %+v", vs[2])
		}
	}
}

// A judge's reason saved with its verdict has the API keys of the
// ensemble's profiles redacted, as the runs' records have.
func TestSavedVerdictReasonIsRedacted(t *testing.T) {
	t.Parallel()
	dir := judgedEnsemble(t, "http://127.0.0.1:9/v1")
	const key = "sk-judge-secret-0123456789abcdef"
	writeFiles(t, dir, map[string]string{
		"e.yaml": `name: judged
input: Sales figures for Q3
models:
  small: {provider: openai, model: fake-model, base_url: "http://127.0.0.1:9/v1", api_key_env: JUDGE_KEY}
agents:
  - name: writer
    model_profile: small
    prompt: Write the report.
`,
		"judged.feature": `Feature: Judged
  Scenario: The key is quoted
    Given the ensemble "e.yaml"
    And the judge "quality" uses model profile "small" with the rubric:
      """
      Score the report from 1 to 5.
      """
    And agent "quality" responds "{\"score\": 5, \"reason\": \"the key ` + key + ` is fine\"}"
    And agent "writer" responds "EMEA grew 12% in Q3."
    When the ensemble runs
    Then the judge "quality" scores agent "writer" at least 4
`})
	env := func(k string) (string, bool) {
		if k == "JUDGE_KEY" {
			return key, true
		}
		return "", false
	}
	o := RunOptions{Paths: []string{filepath.Join(dir, "judged.feature")}, Options: Options{GuardModels: true, LookupEnv: env}}
	tr, _, db, _ := savedResults(t, o)
	vs, err := db.Verdicts(tr)
	if err != nil || len(vs) != 1 {
		t.Fatalf("verdicts: %v, %v", vs, err)
	}
	if strings.Contains(vs[0].Reason, key) || !strings.Contains(vs[0].Reason, "is fine") {
		t.Errorf("the reason saved: %q", vs[0].Reason)
	}
}
