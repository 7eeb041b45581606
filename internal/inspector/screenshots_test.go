package inspector_test

import (
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/ensemble-run/ensemble/internal/browsertest"
)

// screenshots is the folder TestScreenshots writes its PNGs into: `make
// screenshots` gives docs/ui (docs/development.md).
var screenshots = flag.String("screenshots", "", "write the screenshots of the inspector's views into `DIR`")

// TestScreenshots shows each view of the page on runs of the examples,
// saved in one database: the runs, a run's graph and timeline, an
// execution, two executions of a loop compared, a layered graph, a search,
// agents across runs, the form of a run waiting for a person; and a test
// run and a failing run's divergence. With -screenshots DIR it writes each
// view as a 1200-pixel-wide PNG into DIR (docs/ui.md shows them).
func TestScreenshots(t *testing.T) {
	t.Parallel()
	b := browsertest.Shared(t)
	needPython(t)
	// The examples copied, so that the page shows no path of this machine's
	// but a temporary folder's.
	dir := t.TempDir()
	example := func(name string) (string, string) {
		ens, resp := example(name)
		if name == "layered" {
			ens, resp = filepath.Join("testdata", name, "ensemble.yaml"), filepath.Join("testdata", name, "responses.yaml")
		}
		if err := os.CopyFS(filepath.Join(dir, name), os.DirFS(filepath.Dir(ens))); err != nil {
			t.Fatal(err)
		}
		return filepath.Join(dir, name, "ensemble.yaml"), filepath.Join(dir, name, filepath.Base(resp))
	}
	db := filepath.Join(dir, "runs.db")
	ens, resp := example("iterative-analysis")
	loop := saveExampleRun(t, db, ens, resp, "completed")
	ens, resp = example("map-reduce")
	mapReduce := saveExampleRun(t, db, ens, resp, "completed")
	ens, _ = example("approval")
	waiting := saveExampleRun(t, db, ens, "", "awaiting_input")
	url := serve(t, db)
	ctx := b.Tab(t)
	if *screenshots != "" {
		if err := os.MkdirAll(*screenshots, 0o755); err != nil {
			t.Fatal(err)
		}
	}

	shot := func(name string, height int64, steps ...chromedp.Action[chromedp.Void]) {
		t.Helper()
		do(t, ctx, name, append([]chromedp.Action[chromedp.Void]{chromedp.EmulateViewport(1200, height)}, steps...)...)
		if *screenshots == "" {
			return
		}
		png, err := chromedp.Run(ctx, chromedp.CaptureScreenshot())
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if err := os.WriteFile(filepath.Join(*screenshots, name+".png"), png, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// Fork the run that waits from its first turn, so that the list shows a
	// fork and its parent.
	shot("runs", 360,
		chromedp.Navigate(url+"#/run/0/"+waiting.ID),
		chromedp.WaitVisible(css(`button[data-fork-turn="1"]`)),
		eval(`window.confirm = () => true`),
		chromedp.Click(css(`button[data-fork-turn="1"]`)),
		chromedp.WaitVisible(css(`#run:not([data-run-id="`+waiting.ID+`"])`)),
		chromedp.WaitReady(css(`#run[data-status="suspended"]`)),
		chromedp.Navigate(url+"#/"),
		chromedp.WaitVisible(css(`[data-run-id="`+loop.ID+`"][data-status="completed"]`)),
		chromedp.WaitVisible(css(`[data-run-id="`+mapReduce.ID+`"][data-status="completed"]`)),
		chromedp.WaitVisible(css(`[data-run-id="`+waiting.ID+`"][data-status="suspended"]`)),
	)
	shot("run", 720,
		chromedp.Navigate(url+"#/run/0/"+mapReduce.ID),
		chromedp.WaitVisible(css(`[data-expand="summarize"]`)),
		chromedp.Click(css(`[data-expand="summarize"]`)),
		chromedp.WaitVisible(css(`[data-agent="summarize[2]"]`)),
		chromedp.WaitVisible(css(`[data-turn="3"]`)),
	)
	shot("execution", 900,
		chromedp.Click(css(`[data-execution="reduce#1"]`)),
		chromedp.WaitVisible(css(`#execution [data-field="output"]`)),
	)
	shot("diff", 800,
		chromedp.Navigate(url+"#/run/0/"+loop.ID),
		chromedp.WaitVisible(css(`[data-execution="llm_analyzer#2"]`)),
		chromedp.Click(css(`[data-execution="llm_analyzer#2"]`)),
		chromedp.WaitVisible(css(`#execution [data-compare="llm_analyzer"]`)),
		chromedp.SetValue(css(`#execution [data-compare="llm_analyzer"]`), "1"),
		eval(`document.querySelector('#execution [data-compare="llm_analyzer"]').dispatchEvent(new Event("change"))`),
		chromedp.WaitVisible(css(`#execution [data-field="diff"]`)),
		eval(`document.querySelector('#execution [data-compare="llm_analyzer"]').scrollIntoView({block: "start"}); window.scrollBy(0, -60)`),
	)
	// The layered graph of seven agents, a search of its run, and its
	// agents across two runs (saved now: the runs list above has not them).
	lens, lresp := example("layered")
	saveExampleRun(t, db, lens, lresp, "completed")
	layered := saveExampleRun(t, db, lens, lresp, "completed")
	shot("graph", 480,
		chromedp.Navigate(url+"#/run/0/"+layered.ID),
		chromedp.WaitVisible(css(`[data-field="graph"] [data-agent="report"][data-status="completed"]`)),
		chromedp.WaitVisible(css(`[data-edge-label="parse>lint"]`)),
		eval(`document.querySelector('[data-field="graph"]').closest(".card").scrollIntoView({block: "start"}); window.scrollBy(0, -10)`),
	)
	shot("search", 560,
		chromedp.SendKeys(css(`#search [data-field="search"]`), "warnings"),
		chromedp.Click(css(`#search button[type="submit"]`)),
		chromedp.WaitVisible(css(`#search [data-match="fix#1"]`)),
		chromedp.Click(css(`#search [data-match="lint#1"]`)),
		chromedp.WaitVisible(css(`#execution[data-shown="lint#1"]`)),
		eval(`document.querySelector('#search').scrollIntoView({block: "start"}); window.scrollBy(0, -10)`),
	)
	shot("across", 560,
		chromedp.Click(css(`#across summary`)),
		chromedp.WaitVisible(css(`svg[data-chart-agent="fix"] rect[data-run="`+layered.ID+`"]`)),
		eval(`document.querySelector('#across').scrollIntoView({block: "start"}); window.scrollBy(0, -10)`),
	)
	// An LLM execution's model requests, from a run of its own against a
	// fake model server (the examples' runs answer from responses files).
	traced := filepath.Join(dir, "traced.db")
	tracedID, _ := saveTracedRun(t, traced)
	tracedURL := serve(t, traced)
	shot("conversation", 900,
		chromedp.Navigate(tracedURL+"#/run/0/"+tracedID),
		chromedp.WaitVisible(css(`[data-execution="writer#2"]`)),
		chromedp.Click(css(`[data-execution="writer#2"]`)),
		chromedp.WaitVisible(css(`#execution [data-field="conversation"] [data-request="1"]`)),
		chromedp.Click(css(`#execution [data-request="1"] [data-tool-call="call_1"] summary`)),
		eval(`document.querySelector('#execution [data-field="conversation"]').scrollIntoView({block: "start"}); window.scrollBy(0, -20)`),
	)
	shot("answer", 700,
		chromedp.Navigate(url+"#/run/0/"+waiting.ID),
		chromedp.WaitVisible(css(`form#answer textarea[name="approver"]`)),
		chromedp.SendKeys(css(`form#answer textarea[name="approver"]`), `{"approved": true}`),
	)
	// A test run (test --state) of a flaky scenario, and where its failing
	// run departs from its passing run.
	tests := filepath.Join(dir, "tests.db")
	tr := saveTestRun(t, tests)
	testsURL := serve(t, tests)
	shot("test-run", 420,
		chromedp.Navigate(testsURL+"#/tests/0/"+tr.ID),
		chromedp.WaitVisible(css(`[data-result-run="`+tr.failing+`"]`)),
	)
	shot("divergence", 620,
		chromedp.Click(css(`[data-diverge="`+tr.failing+`"]`)),
		chromedp.WaitVisible(css(`#divergence[data-turn="2"] [data-pair="1"]`)),
	)
	// Judge review (judges.go): a test run's judge verdicts, one accepted.
	judged := filepath.Join(dir, "judged.db")
	judgedID := saveJudgedTestRun(t, judged)
	shot("judge-review", 560,
		chromedp.Navigate(serve(t, judged)+"#/tests/0/"+judgedID),
		chromedp.Click(css(`[data-verdict="judged.r1.j1"] [data-action="accept"]`)),
		chromedp.WaitVisible(css(`[data-verdict="judged.r1.j1"][data-label="pass"]`)),
		eval(`document.querySelector('#judge-review').scrollIntoView({block: "start"}); window.scrollBy(0, -10)`),
	)
}
