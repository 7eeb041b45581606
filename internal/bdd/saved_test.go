package bdd

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ensemble-run/ensemble/store"
)

// coinFiles are an ensemble of three script agents, first, coin and last,
// in turns 1, 2 and 3: coin says heads at its odd executions in the
// folder, counted in a file beside it, and tails at the even ones. Its
// scenarios are flaky, and deterministic when run one at a time.
var coinFiles = map[string]string{
	"ensemble.yaml": "name: coin\ninput: go\nagents:\n  - name: first\n    script: first.sh\n  - name: coin\n    script: coin.sh\n    dependencies: [first]\n  - name: last\n    script: last.sh\n    dependencies: [coin]\n",
	"first.sh":      "#!/bin/sh\ncat >/dev/null\necho '{\"success\": true, \"data\": \"ready\"}'\n",
	"coin.sh": "#!/bin/sh\ncat >/dev/null\nd=$(dirname \"$0\")\nn=$(cat \"$d/count\" 2>/dev/null || echo 0)\nn=$((n+1))\necho $n > \"$d/count\"\n" +
		"if [ $((n % 2)) = 1 ]; then echo '{\"success\": true, \"data\": \"heads\"}'; else echo '{\"success\": true, \"data\": \"tails\"}'; fi\n",
	"last.sh": "#!/bin/sh\ncat >/dev/null\necho '{\"success\": true, \"data\": \"done\"}'\n",
}

// coinDir writes coinFiles and the feature into a folder of the test.
func coinDir(t *testing.T, feature string) string {
	t.Helper()
	dir := t.TempDir()
	writeFiles(t, dir, coinFiles)
	for _, s := range []string{"first.sh", "coin.sh", "last.sh"} {
		if err := os.Chmod(filepath.Join(dir, s), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	writeFiles(t, dir, map[string]string{"coin.feature": feature})
	return dir
}

// savedResults runs the features of dir with --state, and returns the
// test run saved and its results.
func savedResults(t *testing.T, o RunOptions) (*store.TestRunInfo, []*store.TestResult, *store.DB, string) {
	t.Helper()
	var out, errs bytes.Buffer
	o.State, o.Output, o.Stderr, o.NoColors = filepath.Join(t.TempDir(), "tests.db"), &out, &errs, true
	code, err := Run(o)
	if err != nil {
		t.Fatalf("exit %d: %v\n%s", code, err, errs.String())
	}
	db, err := store.Open(o.State, false, store.SyncNormal)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	trs, err := db.TestRuns()
	if err != nil || len(trs) != 1 {
		t.Fatalf("test runs: %v, %v", trs, err)
	}
	results, err := db.TestResults(trs[0])
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(errs.String(), "saved test run "+trs[0].ID) {
		t.Errorf("stderr does not say where the test run is: %q", errs.String())
	}
	return trs[0], results, db, errs.String()
}

// A test run without repeats saves each scenario's run as a run of the
// database, and its outcome: the scenario, its outline row, whether it
// passed, the step that failed and why; a scenario whose ensemble never
// ran has no run.
func TestStateSavesScenarioRuns(t *testing.T) {
	t.Parallel()
	dir := coinDir(t, `Feature: Coin
  Scenario: Heads first
    Given the ensemble "ensemble.yaml"
    When the ensemble runs
    Then the output of agent "coin" is "heads"

  Scenario: Heads again
    Given the ensemble "ensemble.yaml"
    When the ensemble runs
    Then the output of agent "coin" is "heads"

  Scenario Outline: No such ensemble <n>
    Given the ensemble "<n>.yaml"
    When the ensemble runs

    Examples:
      | n       |
      | missing |
`)
	tr, results, db, _ := savedResults(t, RunOptions{Paths: []string{dir}})
	if tr.Status != store.TestFailed || tr.Results != 3 || tr.Passed != 1 || tr.Failed != 2 || len(tr.Files) != 1 {
		t.Errorf("the test run: %+v", tr)
	}
	if len(results) != 3 {
		t.Fatalf("results: %+v", results)
	}
	heads, again, missing := results[0], results[1], results[2]
	if heads.Scenario != "Heads first" || heads.Line != 2 || heads.Status != store.TestPassed || heads.Repeat != 1 || heads.Run != tr.ID+".1" || heads.Step != "" {
		t.Errorf("the passing scenario: %+v", heads)
	}
	if again.Status != store.TestFailed || again.Run != tr.ID+".2" || again.Step != `Then the output of agent "coin" is "heads"` || !strings.Contains(again.Message, "tails") {
		t.Errorf("the failing scenario: %+v", again)
	}
	if missing.Scenario != "No such ensemble missing" || missing.Example != 1 || missing.Run != "" || !strings.Contains(missing.Step, `Given the ensemble "missing.yaml"`) {
		t.Errorf("the scenario that never ran its ensemble: %+v", missing)
	}
	for _, r := range []*store.TestResult{heads, again} {
		info, err := db.Run(r.Run)
		if err != nil || info.Ensemble != "coin" || info.CompletionReason != "completed" || info.Turns != 3 {
			t.Errorf("run %s: %+v, %v", r.Run, info, err)
		}
	}
}

// A test run with repeats saves each repeat: its number, its run, and
// whether it counted.
func TestStateSavesRepeats(t *testing.T) {
	t.Parallel()
	dir := coinDir(t, `Feature: Coin
  @repeat(2)
  Scenario: Heads
    Given the ensemble "ensemble.yaml"
    When the ensemble runs
    Then the output of agent "coin" is "heads"
`)
	tr, results, db, _ := savedResults(t, RunOptions{Paths: []string{dir}, Repeats: Repeats{Concurrency: 1}})
	if tr.Results != 2 || tr.Passed != 1 || tr.Failed != 1 || tr.Status != store.TestFailed {
		t.Errorf("the test run: %+v", tr)
	}
	for i, want := range []string{store.TestPassed, store.TestFailed} {
		r := results[i]
		if r.Repeat != i+1 || r.Status != want || r.Scenario != "Heads" || r.Feature == "" || r.Run == "" || r.Duration <= 0 {
			t.Errorf("repeat %d: %+v", i+1, r)
		}
		if _, err := db.Run(r.Run); err != nil {
			t.Errorf("repeat %d's run: %v", i+1, err)
		}
	}
	if !strings.Contains(results[1].Message, "tails") {
		t.Errorf("the failing repeat's message: %q", results[1].Message)
	}
}

// --state names a state database: a JSON state file is refused before
// anything runs.
func TestStateRefusesAJSONFile(t *testing.T) {
	t.Parallel()
	dir := coinDir(t, "Feature: x\n  Scenario: y\n    Given the ensemble \"ensemble.yaml\"\n")
	path := filepath.Join(t.TempDir(), "state.json")
	writeFiles(t, filepath.Dir(path), map[string]string{"state.json": "{}"})
	code, err := Run(RunOptions{Paths: []string{dir}, State: path, Output: &bytes.Buffer{}, Stderr: &bytes.Buffer{}})
	if code != ExitUsage || err == nil || !strings.Contains(err.Error(), "not a state database") {
		t.Errorf("exit %d, %v", code, err)
	}
}
