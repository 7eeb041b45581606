package inspector_test

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/ensemble-run/ensemble/internal/bdd"
	"github.com/ensemble-run/ensemble/internal/browsertest"
	"github.com/ensemble-run/ensemble/store"
)

// benchScenarioRuns is the size of the test run the test-run benchmarks
// list: 1,000 scenario runs (docs/performance.md, "Test runs": the target
// is 1 s).
const benchScenarioRuns = 1000

// benchTestFiles are two scenarios of an ensemble of two LLM agents
// answered by injected replies (no process started, no model), each run
// 500 times: one passes, one fails at its last step.
var benchTestFiles = map[string]string{
	"ensemble.yaml": "name: bench\ninput: go\nmodels:\n  m: {provider: anthropic, model: none, api_key_env: BENCH_NO_KEY}\nagents:\n" +
		"  - name: a\n    model_profile: m\n    prompt: p\n  - name: b\n    model_profile: m\n    prompt: p\n    dependencies: [a]\n",
	"bench.feature": fmt.Sprintf(`Feature: Bench
  @repeat(%[1]d)
  Scenario: Passes
    Given the ensemble "ensemble.yaml"
    And agent "a" responds "one"
    And agent "b" responds "two"
    When the ensemble runs
    Then the output of agent "b" is "two"

  @repeat(%[1]d)
  Scenario: Fails
    Given the ensemble "ensemble.yaml"
    And agent "a" responds "one"
    And agent "b" responds "two"
    When the ensemble runs
    Then the output of agent "b" is "three"
`, benchScenarioRuns/2),
}

// saveBenchTestRun saves a test run of benchScenarioRuns scenario runs in
// a database of the benchmark's, untimed, and returns it and its id.
func saveBenchTestRun(b *testing.B) (path, id string) {
	b.Helper()
	dir := b.TempDir()
	for name, body := range benchTestFiles {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			b.Fatal(err)
		}
	}
	path = filepath.Join(dir, "runs.db")
	var out bytes.Buffer
	// A baseline saved makes every scenario run all its repeats.
	code, err := bdd.Run(bdd.RunOptions{Paths: []string{dir}, State: path, Output: &out, Stderr: &out, NoColors: true,
		Repeats: bdd.Repeats{SaveBaseline: filepath.Join(dir, "baseline.json")}})
	if code != bdd.ExitFailed || err != nil {
		b.Fatalf("exit %d, %v:\n%s", code, err, out.String())
	}
	db, err := store.Open(path, false, store.SyncNormal)
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	trs, err := db.TestRuns()
	if err != nil || len(trs) != 1 || trs[0].Results != benchScenarioRuns {
		b.Fatalf("test runs: %+v, %v", trs, err)
	}
	return path, trs[0].ID
}

// BenchmarkTestRunAPI asks the server for the list of test runs and for
// the test run of 1,000 scenario runs (its scenarios, their pass rates and
// each run), as the page does when it opens it.
func BenchmarkTestRunAPI(b *testing.B) {
	path, id := saveBenchTestRun(b)
	url, stop := start(b, path)
	defer stop()
	base, token := url[:len(url)-len("/?token=")-len(tokenOf(url))], tokenOf(url)
	get := func(p string) {
		req, _ := http.NewRequest("GET", base+p, nil)
		req.Header.Set("X-Ensemble-Token", token)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		var buf bytes.Buffer
		buf.ReadFrom(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 {
			b.Fatalf("GET %s: %d %s", p, resp.StatusCode, buf.String())
		}
	}
	var total time.Duration
	for b.Loop() {
		began := time.Now()
		get("/api/tests")
		get("/api/tests/run?db=0&id=" + id)
		total += time.Since(began)
	}
	b.ReportMetric(float64(total.Microseconds())/1000/float64(b.N), "ms/list")
}

// tokenOf is the token of a page's URL (…/?token=T).
func tokenOf(url string) string {
	const k = "?token="
	for i := len(url) - len(k); i >= 0; i-- {
		if url[i:i+len(k)] == k {
			return url[i+len(k):]
		}
	}
	return ""
}

// BenchmarkTestRunList opens the page of the test run of 1,000 scenario
// runs in headless Chromium, from a blank page, until its two scenarios
// show with every run of each: what a person waits for who opens it.
// ms/list is the time until chromedp sees it (its queries add to it),
// ms/in-page the time the page took, from the start of its navigation to
// the first frame that shows every run.
func BenchmarkTestRunList(b *testing.B) {
	br := browsertest.Shared(b)
	path, id := saveBenchTestRun(b)
	url, stop := start(b, path)
	defer stop()
	ctx := br.Tab(b)
	all := fmt.Sprintf(`document.querySelectorAll("#test-run [data-result-run]").length === %d`, benchScenarioRuns)
	probe := `(function () { const look = () => { if (` + all + `) window.__seen = performance.now(); else requestAnimationFrame(look); }; look(); })()`
	var total time.Duration
	var inPage float64
	n := 0
	for b.Loop() {
		b.StopTimer()
		do(b, ctx, "a blank page", chromedp.Navigate("about:blank"))
		b.StartTimer()
		began := time.Now()
		do(b, ctx, "the test run",
			chromedp.Navigate(url+"#/tests/0/"+id), eval(probe),
			chromedp.WaitVisible(css(`#test-run [data-pass-rate="0"]`)),
			chromedp.WaitVisible(css(`#test-run [data-pass-rate="1"]`)),
			pollTrue(all))
		total += time.Since(began)
		b.StopTimer()
		seen, err := chromedp.Run(ctx, chromedp.Poll[float64](`window.__seen`))
		if err != nil {
			b.Fatal(err)
		}
		inPage += seen
		n++
		b.StartTimer()
	}
	b.ReportMetric(float64(total.Milliseconds())/float64(n), "ms/list")
	b.ReportMetric(inPage/float64(n), "ms/in-page")
}

// pollTrue waits until the JavaScript expression is true.
func pollTrue(expr string) chromedp.Action[chromedp.Void] {
	return chromedp.Func(func(ctx context.Context, t *chromedp.Target) error {
		_, err := chromedp.Poll[bool](expr)(ctx, t)
		return err
	})
}
