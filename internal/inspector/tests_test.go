package inspector_test

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/ensemble-run/ensemble/internal/bdd"
	"github.com/ensemble-run/ensemble/internal/browsertest"
	"github.com/ensemble-run/ensemble/internal/inspector"
	"github.com/ensemble-run/ensemble/store"
)

// coinFiles are an ensemble of three script agents, first, coin and last,
// in turns 1, 2 and 3, and its feature: coin says heads at its odd
// executions (counted in a file beside it) and tails at the even ones, so
// that of the two runs of the scenario Heads, run one at a time, the first
// passes and the second fails at turn 2.
var coinFiles = map[string]string{
	"ensemble.yaml": "name: coin\ninput: go\nagents:\n  - name: first\n    script: first.sh\n  - name: coin\n    script: coin.sh\n    dependencies: [first]\n  - name: last\n    script: last.sh\n    dependencies: [coin]\n",
	"first.sh":      "#!/bin/sh\ncat >/dev/null\necho '{\"success\": true, \"data\": \"ready\"}'\n",
	"coin.sh": "#!/bin/sh\ncat >/dev/null\nd=$(dirname \"$0\")\nn=$(cat \"$d/count\" 2>/dev/null || echo 0)\nn=$((n+1))\necho $n > \"$d/count\"\n" +
		"if [ $((n % 2)) = 1 ]; then echo '{\"success\": true, \"data\": \"heads\"}'; else echo '{\"success\": true, \"data\": \"tails\"}'; fi\n",
	"last.sh": "#!/bin/sh\ncat >/dev/null\necho '{\"success\": true, \"data\": \"done\"}'\n",
	"coin.feature": `Feature: Coin
  @repeat(2)
  Scenario: Heads
    Given the ensemble "ensemble.yaml"
    When the ensemble runs
    Then the output of agent "coin" is "heads"

  Scenario: Ready
    Given the ensemble "ensemble.yaml"
    When the ensemble runs
    Then the output of agent "first" is "ready"
`,
}

// savedTestRun is a test run saved by test --state.
type savedTestRun struct {
	ID               string
	passing, failing string // the runs of the scenario Heads
	ready            string // the run of the scenario Ready
}

// saveTestRun runs coinFiles' feature with test --state path.
func saveTestRun(t testing.TB, path string) savedTestRun {
	t.Helper()
	dir := t.TempDir()
	for name, body := range coinFiles {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	var out bytes.Buffer
	code, err := bdd.Run(bdd.RunOptions{Paths: []string{dir}, State: path, Output: &out, Stderr: &out, NoColors: true, Repeats: bdd.Repeats{Concurrency: 1}})
	if code != bdd.ExitFailed || err != nil {
		t.Fatalf("exit %d, %v:\n%s", code, err, out.String())
	}
	db, err := store.Open(path, false, store.SyncNormal)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	trs, err := db.TestRuns()
	if err != nil || len(trs) == 0 {
		t.Fatalf("test runs: %v, %v", trs, err)
	}
	tr := trs[len(trs)-1]
	results, err := db.TestResults(tr)
	if err != nil || len(results) != 3 {
		t.Fatalf("results: %v, %v", results, err)
	}
	return savedTestRun{ID: tr.ID, passing: results[0].Run, failing: results[1].Run, ready: results[2].Run}
}

// The API lists the test runs, a test run's scenarios with their pass
// rates and runs, the test run of a run, and where a failing run departs
// from the passing run of its scenario: turn 2, where coin gave tails.
func TestTestRunsAPI(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "runs.db")
	tr := saveTestRun(t, path)
	f := serveDB(t, path)

	var list struct {
		TestRuns []inspector.TestRunSummary `json:"test_runs"`
	}
	if code := f.do(t, "GET", "/api/tests", nil, &list); code != 200 || len(list.TestRuns) != 1 {
		t.Fatalf("GET /api/tests: %d %+v", code, list)
	}
	if got := list.TestRuns[0]; got.ID != tr.ID || got.Results != 3 || got.Passed != 2 || got.Failed != 1 || got.Status != "failed" || got.DBPath != path {
		t.Errorf("the test run listed: %+v", got.TestRunInfo)
	}

	var view inspector.TestRunView
	if code := f.do(t, "GET", "/api/tests/run?id="+tr.ID, nil, &view); code != 200 || len(view.Scenarios) != 2 {
		t.Fatalf("GET /api/tests/run: %d %+v", code, view)
	}
	heads, ready := view.Scenarios[0], view.Scenarios[1]
	if heads.Scenario != "Heads" || heads.PassRate == nil || *heads.PassRate != 0.5 || len(heads.Runs) != 2 ||
		heads.Runs[0].Run != tr.passing || heads.Runs[1].Run != tr.failing || heads.Runs[1].Status != "failed" {
		t.Errorf("the scenario Heads: %+v", heads)
	}
	if ready.Scenario != "Ready" || ready.PassRate == nil || *ready.PassRate != 1 || len(ready.Runs) != 1 {
		t.Errorf("the scenario Ready: %+v", ready)
	}
	if code := f.do(t, "GET", "/api/tests/run?id=nope", nil, nil); code != 404 {
		t.Errorf("an unknown test run: %d", code)
	}

	var of struct {
		TestRun string            `json:"test_run"`
		Result  *store.TestResult `json:"result"`
	}
	if code := f.do(t, "GET", "/api/tests/of?id="+tr.failing, nil, &of); code != 200 || of.TestRun != tr.ID || of.Result == nil || of.Result.Repeat != 2 {
		t.Errorf("the test run of the failing run: %d %+v", code, of)
	}

	var dv inspector.Divergence
	if code := f.do(t, "GET", "/api/tests/divergence?id="+tr.failing, nil, &dv); code != 200 {
		t.Fatalf("GET /api/tests/divergence: %d %+v", code, dv)
	}
	if dv.Turn != 2 || dv.Failing.Run != tr.failing || dv.Passing.Run != tr.passing || len(dv.Failing.Records) != 1 || len(dv.Passing.Records) != 1 {
		t.Fatalf("the divergence: %+v", dv)
	}
	if f, p := dv.Failing.Records[0], dv.Passing.Records[0]; f.AgentName != "coin" || f.OutputData != "tails" || p.OutputData != "heads" {
		t.Errorf("the divergent turn: failing %+v, passing %+v", f, p)
	}
	if !strings.Contains(dv.Note, `agent "coin" gave another outcome`) || strings.Contains(dv.Note, "input") {
		t.Errorf("the note: %q", dv.Note)
	}
	if !strings.Contains(dv.Failing.Result.Step, `the output of agent "coin" is "heads"`) {
		t.Errorf("the failing step: %+v", dv.Failing.Result)
	}
	// The scenario Ready has no other run to compare with.
	if code := f.do(t, "GET", "/api/tests/divergence?id="+tr.ready, nil, &dv); code != 404 {
		t.Errorf("a run with no passing run to compare with: %d", code)
	}
	if code := f.do(t, "GET", "/api/tests/divergence?id="+tr.failing+"&with="+tr.ready, nil, nil); code != 404 {
		t.Errorf("compared with another scenario's run: %d", code)
	}
}

// The test runs' page never parses data as HTML either.
func TestTestsPageWritesNoHTML(t *testing.T) {
	t.Parallel()
	b, err := os.ReadFile(filepath.Join("web", "tests.js"))
	if err != nil {
		t.Fatal(err)
	}
	for _, sink := range []string{"innerHTML", "outerHTML", "insertAdjacentHTML", "document.write", "eval(", "new Function", "srcdoc", "javascript:"} {
		if strings.Contains(string(b), sink) {
			t.Errorf("tests.js uses %s: build elements with el() and textContent", sink)
		}
	}
}

// The test runs in a browser: the list, a test run's scenarios with their
// pass rates, and from the failing run (in the test run, and on the run's
// own page) one click to its divergence, turn 2 side by side.
func TestBrowserTestRuns(t *testing.T) {
	t.Parallel()
	b := browsertest.Shared(t)
	path := filepath.Join(t.TempDir(), "runs.db")
	tr := saveTestRun(t, path)
	url := serve(t, path)
	ctx := b.Tab(t)

	do(t, ctx, "the test runs",
		chromedp.Navigate(url),
		chromedp.WaitVisible(css(`#nav-tests`)),
		chromedp.Click(css(`#nav-tests`)),
		chromedp.WaitVisible(css(`#test-runs [data-test-run="`+tr.ID+`"][data-status="failed"]`)),
		chromedp.Click(css(`[data-test-run="`+tr.ID+`"] a`)),
		chromedp.WaitVisible(css(`#test-run[data-test-run="`+tr.ID+`"] [data-pass-rate="0.5"]`)),
		chromedp.WaitVisible(css(`#test-run [data-pass-rate="1"]`)),
		chromedp.WaitVisible(css(`[data-result-run="`+tr.passing+`"][data-status="passed"]`)),
		chromedp.WaitVisible(css(`[data-result-run="`+tr.failing+`"][data-status="failed"]`)),
	)
	if got := text(t, ctx, `#test-run [data-pass-rate="0.5"]`); !strings.Contains(got, "Heads") || !strings.Contains(got, "50%") || !strings.Contains(got, "1 passed, 1 failed") {
		t.Errorf("the scenario Heads reads %q", got)
	}
	diverged := func(what string) {
		t.Helper()
		do(t, ctx, what, chromedp.WaitVisible(css(`#divergence[data-turn="2"][data-passing="`+tr.passing+`"] [data-pair="1"][data-differs="yes"]`)))
		pair := text(t, ctx, `#divergence [data-pair="1"]`)
		if !strings.Contains(pair, "coin #1") || !strings.Contains(pair, "tails") || !strings.Contains(pair, "heads") {
			t.Errorf("%s: the divergent turn reads %q", what, pair)
		}
		if step := text(t, ctx, `#divergence [data-field="failed-step"]`); !strings.Contains(step, `the output of agent "coin" is "heads"`) {
			t.Errorf("%s: the failed step reads %q", what, step)
		}
	}
	do(t, ctx, "the failing run's divergence", chromedp.Click(css(`[data-diverge="`+tr.failing+`"]`)))
	diverged("from the test run")
	do(t, ctx, "the failing run's page",
		chromedp.Click(css(`#divergence a[data-side="failing"]`)),
		chromedp.WaitVisible(css(`#run[data-run-id="`+tr.failing+`"] [data-field="test-result"][data-status="failed"]`)),
		chromedp.Click(css(`[data-field="test-result"] [data-diverge]`)),
	)
	diverged("from the run's page")
}
