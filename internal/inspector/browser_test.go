package inspector_test

// The page in a real browser: headless Chromium (internal/browsertest),
// driven through chromedp, on runs saved by the engine from the examples
// (docs/ui.md). Each test has its own server and databases and a tab of the
// test binary's one browser; they wait for elements of the page (the
// data-* hooks of docs/ui.md), never for a duration.

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/ensemble-run/ensemble/internal/benchdata"
	"github.com/ensemble-run/ensemble/internal/browsertest"
	"github.com/ensemble-run/ensemble/internal/inspector"
)

func TestMain(m *testing.M) {
	code := m.Run()
	browsertest.Close()
	os.Exit(code)
}

// example is the ensemble file and responses file of an example.
func example(name string) (ens, responses string) {
	dir := filepath.Join("..", "..", "examples", name)
	return filepath.Join(dir, "ensemble.yaml"), filepath.Join(dir, "responses.yaml")
}

// saveExampleRun saves a run of the ensemble at ens in db (SaveRun), and checks
// how it ended.
func saveExampleRun(t testing.TB, db, ens, responses, want string) benchdata.Saved {
	t.Helper()
	s, err := benchdata.SaveRun(context.Background(), db, ens, responses)
	if err != nil {
		t.Fatal(err)
	}
	if s.Reason != want {
		t.Fatalf("%s ended %s after %d turns, want %s", ens, s.Reason, s.Turns, want)
	}
	return s
}

// serve serves dbs for the test's length and returns the page's URL, with
// its token.
func serve(t testing.TB, dbs ...string) string {
	t.Helper()
	url, stop := start(t, dbs...)
	t.Cleanup(stop)
	return url
}

// start serves dbs until stop, and returns the page's URL, with its token.
func start(t testing.TB, dbs ...string) (url string, stop func()) {
	t.Helper()
	srv, err := inspector.New(inspector.Options{DBs: dbs})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(srv.Handler())
	return srv.URL(ts.Listener.Addr().String()), func() {
		ts.Close()
		if err := srv.Close(); err != nil {
			t.Error(err)
		}
	}
}

// css is a CSS selector for chromedp: the first element it matches.
type css = chromedp.CSS

// do runs steps in the tab, failing t with what was being done.
func do(t testing.TB, ctx context.Context, what string, steps ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	if err := chromedp.Do(ctx, steps...); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

// eval evaluates a JavaScript expression in the page.
func eval(expr string) chromedp.Action[chromedp.Void] {
	return chromedp.Func(func(ctx context.Context, t *chromedp.Target) error {
		_, err := chromedp.Evaluate[any](expr)(ctx, t)
		return err
	})
}

// text is the text of the first element sel matches, once it is visible.
func text(t testing.TB, ctx context.Context, sel string) string {
	t.Helper()
	do(t, ctx, "waiting for "+sel, chromedp.WaitVisible(css(sel)))
	v, err := chromedp.Run(ctx, chromedp.TextContent(css(sel)))
	if err != nil {
		t.Fatalf("reading %s: %v", sel, err)
	}
	return v
}

// The saved run of examples/map-reduce: its agents in the graph, the
// fan-out's instances once expanded, and an execution's output.
func TestBrowserMapReduce(t *testing.T) {
	t.Parallel()
	b := browsertest.Shared(t)
	needPython(t)
	db := filepath.Join(t.TempDir(), "runs.db")
	ens, resp := example("map-reduce")
	run := saveExampleRun(t, db, ens, resp, "completed")
	url := serve(t, db)
	ctx := b.Tab(t)

	row := `[data-run-id="` + run.ID + `"]`
	do(t, ctx, "the runs list",
		chromedp.Navigate(url),
		chromedp.WaitVisible(css(row+`[data-status="completed"]`)),
		chromedp.Click(css(row+" a")),
		chromedp.WaitVisible(css(`#run[data-run-id="`+run.ID+`"]`)),
	)
	for _, agent := range []string{"split", "summarize", "reduce"} {
		do(t, ctx, "the graph's "+agent, chromedp.WaitVisible(css(`[data-agent="`+agent+`"][data-status="completed"]`)))
	}
	do(t, ctx, "the fan-out's instances",
		chromedp.Click(css(`[data-expand="summarize"]`)),
		chromedp.WaitVisible(css(`[data-agent="summarize[0]"]`)),
		chromedp.WaitVisible(css(`[data-agent="summarize[1]"]`)),
		chromedp.WaitVisible(css(`[data-agent="summarize[2]"]`)),
	)
	do(t, ctx, "the timeline", chromedp.WaitVisible(css(`[data-turn="1"]`)), chromedp.Click(css(`[data-execution="reduce#1"]`)))
	out := text(t, ctx, `#execution [data-field="output"]`)
	// reduce merges the model's summaries (responses.yaml), in chunk order.
	for _, want := range []string{"YAML workflows", "A fan-out runs an agent once per list item."} {
		if !strings.Contains(out, want) {
			t.Errorf("reduce's output on the page is %q, want it to hold %q", out, want)
		}
	}
	if in := text(t, ctx, `#execution [data-field="input"]`); in == "" {
		t.Error("reduce's input is empty on the page")
	}
	// reduce neither failed nor wrote to stderr: no empty box for either.
	if n, err := chromedp.Run(ctx, chromedp.Evaluate[int](`document.querySelectorAll('#execution [data-field="error"], #execution [data-field="stderr"]').length`)); err != nil || n != 0 {
		t.Errorf("the panel shows %d error or stderr boxes (%v), want none", n, err)
	}
	// The fan-out's own record of turn 2 is the gathering of its three
	// instances, said so in the timeline and in the panel.
	if g := text(t, ctx, `[data-turn="2"] [data-execution="summarize#1"][data-gather="3"]`); !strings.Contains(g, "gathers 3 instances") {
		t.Errorf("summarize#1 in the timeline reads %q, want it to say it gathers 3 instances", g)
	}
	do(t, ctx, "the gathering", chromedp.Click(css(`[data-execution="summarize#1"]`)))
	if g := text(t, ctx, `#execution [data-field="gather"]`); !strings.Contains(g, "summarize[2]") {
		t.Errorf("summarize#1's panel says %q, want it to name its instances", g)
	}
}

// A child's child opens from the execution panel, numbered across the
// loop's rounds around it: outer runs middle.yaml twice, whose step runs
// leaf.yaml's count once each time.
func TestBrowserChildOfChild(t *testing.T) {
	t.Parallel()
	b := browsertest.Shared(t)
	needPython(t)
	db := filepath.Join(t.TempDir(), "runs.db")
	run := saveExampleRun(t, db, filepath.Join("testdata", "deep", "ensemble.yaml"), "", "completed")
	url := serve(t, db)
	ctx := b.Tab(t)
	do(t, ctx, "outer's execution",
		chromedp.Navigate(url+"#/run/0/"+run.ID),
		chromedp.Click(css(`[data-turn="1"] [data-execution="outer#1"]`)),
		chromedp.Click(css(`#execution [data-execution="outer/step#2"]`)),
		chromedp.WaitVisible(css(`#execution [data-parent="outer#1"]`)),
		chromedp.Click(css(`#execution [data-execution="outer/step/count#2"]`)),
	)
	if h := text(t, ctx, `#execution h2`); !strings.Contains(h, "outer/step/count · 2 of 2") {
		t.Errorf("the panel's heading is %q, want outer/step/count's second execution", h)
	}
	if out := text(t, ctx, `#execution [data-field="output"]`); !strings.Contains(out, `"seen": "again"`) {
		t.Errorf("outer/step/count#2's output is %q, want the second round's", out)
	}
}

// A suspended run of examples/approval: its question in the form, answered
// there, and the run resumed to completion.
func TestBrowserAnswer(t *testing.T) {
	t.Parallel()
	b := browsertest.Shared(t)
	needPython(t)
	db := filepath.Join(t.TempDir(), "runs.db")
	ens, _ := example("approval")
	run := saveExampleRun(t, db, ens, "", "awaiting_input") // no responses: the approver waits
	url := serve(t, db)
	ctx := b.Tab(t)

	do(t, ctx, "the form",
		chromedp.Navigate(url+"#/run/0/"+run.ID),
		chromedp.WaitVisible(css(`#run[data-run-id="`+run.ID+`"]`)),
		chromedp.WaitVisible(css(`form#answer textarea[name="approver"]`)),
		chromedp.SendKeys(css(`form#answer textarea[name="approver"]`), `{"approved": true}`),
		chromedp.Click(css(`form#answer button[type=submit]`)),
	)
	// The run goes on in the background; the page follows it.
	do(t, ctx, "the run completed",
		chromedp.WaitVisible(css(`[data-agent="publisher"][data-status="completed"]`)),
		chromedp.WaitReady(css(`#run[data-status="completed"]`)),
		chromedp.Navigate(url+"#/"),
		chromedp.WaitVisible(css(`[data-run-id="`+run.ID+`"][data-status="completed"]`)),
	)
}

// A fork from turn 2 of a completed run of examples/approval: the page
// goes to the new run, and the runs list shows both, the new one naming
// its parent.
func TestBrowserFork(t *testing.T) {
	t.Parallel()
	b := browsertest.Shared(t)
	needPython(t)
	db := filepath.Join(t.TempDir(), "runs.db")
	ens, resp := example("approval")
	run := saveExampleRun(t, db, ens, resp, "completed")
	url := serve(t, db)
	ctx := b.Tab(t)
	// A turn neither the first nor the last of the run: a fork from
	// another one would show.
	if run.Turns < 3 {
		t.Fatalf("the run has %d turns: too few to choose one between the first and the last", run.Turns)
	}
	const chosen = 2

	do(t, ctx, "the fork",
		chromedp.Navigate(url+"#/run/0/"+run.ID),
		chromedp.WaitVisible(css(`#run[data-run-id="`+run.ID+`"] [data-turn="2"]`)),
		// The page asks for a confirmation (window.confirm): yes.
		eval(`window.confirm = () => true`),
		chromedp.Click(css(`button[data-fork-turn="`+strconv.Itoa(chosen)+`"]`)),
		chromedp.WaitVisible(css(`#run:not([data-run-id="`+run.ID+`"])`)),
	)
	attrs, err := chromedp.Run(ctx, chromedp.Attributes(css(`#run`)))
	if err != nil {
		t.Fatal(err)
	}
	fork := attrs["data-run-id"]
	do(t, ctx, "the forked run completed",
		chromedp.WaitReady(css(`#run[data-status="completed"]`)),
		chromedp.Navigate(url+"#/"),
		chromedp.WaitVisible(css(`[data-run-id="`+run.ID+`"][data-status="completed"]`)),
		chromedp.WaitVisible(css(`[data-run-id="`+fork+`"][data-status="completed"]`)),
	)
	if row := text(t, ctx, `[data-run-id="`+fork+`"]`); !strings.Contains(row, run.ID) {
		t.Errorf("the fork's row says %q: it does not name its parent %s", row, run.ID)
	}
	if row := text(t, ctx, `[data-run-id="`+run.ID+`"]`); strings.Contains(row, fork) {
		t.Errorf("the parent's row says %q: it names its fork", row)
	}
	// The fork goes on from the turn chosen on the page: what the server
	// saved, and what its row shows.
	var runs struct {
		Runs []struct {
			ID         string `json:"id"`
			Parent     string `json:"parent"`
			ParentTurn int    `json:"parent_turn"`
		} `json:"runs"`
	}
	base, token, _ := strings.Cut(url, "/?token=")
	hr, err := http.Get(base + "/api/runs?token=" + token)
	if err != nil {
		t.Fatal(err)
	}
	defer hr.Body.Close()
	if err := json.NewDecoder(hr.Body).Decode(&runs); err != nil {
		t.Fatal(err)
	}
	found := false
	for _, r := range runs.Runs {
		if r.ID == fork {
			found = true
			if r.Parent != run.ID || r.ParentTurn != chosen {
				t.Errorf("the fork's parent is %s at turn %d, want %s at turn %d, the turn chosen on the page", r.Parent, r.ParentTurn, run.ID, chosen)
			}
		}
	}
	if !found {
		t.Errorf("the fork %s is not listed: %+v", fork, runs.Runs)
	}
	if row := text(t, ctx, `[data-run-id="`+fork+`"]`); !strings.Contains(row, fmt.Sprintf("%s @ %d", run.ID, chosen)) {
		t.Errorf("the fork's row says %q, not that it went on from turn %d of %s", row, chosen, run.ID)
	}
}

// A run saved while the runs list is open shows up in it, and a run seen
// running is seen completed, without a reload.
func TestBrowserLiveList(t *testing.T) {
	t.Parallel()
	b := browsertest.Shared(t)
	needPython(t)
	dir := t.TempDir()
	db := filepath.Join(dir, "runs.db")
	ens, resp := example("map-reduce")
	first := saveExampleRun(t, db, ens, resp, "completed")
	url := serve(t, db)
	ctx := b.Tab(t)
	do(t, ctx, "the runs list",
		chromedp.Navigate(url),
		chromedp.WaitVisible(css(`[data-run-id="`+first.ID+`"]`)),
		// A mark on the page, which a reload would lose.
		eval(`window.__same = true`),
	)
	second := saveExampleRun(t, db, ens, resp, "completed")
	do(t, ctx, "the new run", chromedp.WaitVisible(css(`[data-run-id="`+second.ID+`"][data-status="completed"]`)))
	if same, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`window.__same === true`)); err != nil || !same {
		t.Errorf("the page was loaded again (%v): the list must update in place", err)
	}
}

// A run's warnings show on its first screen: a read of a missing key with
// the key meant.
func TestBrowserWarnings(t *testing.T) {
	t.Parallel()
	b := browsertest.Shared(t)
	db := filepath.Join(t.TempDir(), "runs.db")
	dir := filepath.Join("testdata", "missing")
	run := saveExampleRun(t, db, filepath.Join(dir, "ensemble.yaml"), filepath.Join(dir, "responses.yaml"), "completed")
	url := serve(t, db)
	ctx := b.Tab(t)
	do(t, ctx, "the run", chromedp.Navigate(url+"#/run/0/"+run.ID), chromedp.WaitVisible(css(`#run[data-run-id="`+run.ID+`"]`)))
	if w := text(t, ctx, `[data-field="warnings"] [data-kind="missing_read"]`); !strings.Contains(w, "security") || !strings.Contains(w, "did you mean `touches_code`?") {
		t.Errorf("warnings: %q", w)
	}
}

// A run whose expectation is false says which one on its first screen, with
// the values it read.
func TestBrowserExpectations(t *testing.T) {
	t.Parallel()
	b := browsertest.Shared(t)
	db := filepath.Join(t.TempDir(), "runs.db")
	dir := filepath.Join("testdata", "expect")
	run := saveExampleRun(t, db, filepath.Join(dir, "ensemble.yaml"), filepath.Join(dir, "responses.yaml"), "expectation_failed")
	url := serve(t, db)
	ctx := b.Tab(t)
	do(t, ctx, "the run", chromedp.Navigate(url+"#/run/0/"+run.ID), chromedp.WaitVisible(css(`#run[data-run-id="`+run.ID+`"]`)))
	box := text(t, ctx, `[data-field="expectations"]`)
	if !strings.Contains(box, "1 of its 2 expectations") || strings.Contains(box, "turn_count") {
		t.Errorf("expectations: %q, want the one that failed of two", box)
	}
	x := `[data-field="expectations"] [data-expectation="context.judge.verdict == 'APPROVE'"]`
	if got := text(t, ctx, x+` code`); got != "context.judge.verdict == 'APPROVE'" {
		t.Errorf("expression %q", got)
	}
	if got := text(t, ctx, x+` [data-path="context.judge.verdict"]`); got != `context.judge.verdict = "REJECT"` {
		t.Errorf("value read: %q", got)
	}
}
