package inspector_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/ensemble-run/ensemble/internal/browsertest"
	"github.com/ensemble-run/ensemble/internal/inspector"
	"github.com/ensemble-run/ensemble/store"
)

// saveJudgedTestRun writes a test run of two scenario runs into path: the
// first with two judge verdicts (a pass of the writer, a fail of the
// editor), the second with none. It returns the test run's id.
func saveJudgedTestRun(t testing.TB, path string) string {
	t.Helper()
	db, err := store.Open(path, true, store.SyncNormal)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	tr, err := db.CreateTestRun("judged", []string{"judged.feature"})
	if err != nil {
		t.Fatal(err)
	}
	if err := db.SaveTestResult(tr, &store.TestResult{Feature: "judged.feature", Scenario: "Report", Line: 2, Repeat: 1, Status: store.TestFailed}); err != nil {
		t.Fatal(err)
	}
	err = db.SaveVerdicts(tr, []*store.Verdict{
		{Judge: "quality", Agent: "writer", Step: `the judge "quality" scores agent "writer" at least 4`, Rubric: "Score 1 to 5.", Score: 5, Threshold: "4", Passed: true, Reason: "names <b>EMEA</b>"},
		{Judge: "quality", Agent: "editor", Step: `the judge "quality" scores agent "editor" at least 3`, Rubric: "Score 1 to 5.", Score: 2, Threshold: "3", Reason: "names no region"},
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := db.SaveTestResult(tr, &store.TestResult{Feature: "judged.feature", Scenario: "Plain", Line: 9, Repeat: 1, Status: store.TestPassed}); err != nil {
		t.Fatal(err)
	}
	if err := db.FinishTestRun(tr, store.TestFailed); err != nil {
		t.Fatal(err)
	}
	return tr.ID
}

// The judge verdicts of a test run, and their labels: accepting one labels
// it with the judge's verdict, overriding with the other, labelling again
// replaces the label; a bad body, an unknown verdict, a request without
// the token or from another Host are refused and change nothing.
func TestJudgeReviewAPI(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "runs.db")
	id := saveJudgedTestRun(t, path)
	f := serveDB(t, path)
	verdicts := func() inspector.VerdictsView {
		t.Helper()
		var v inspector.VerdictsView
		if code := f.do(t, "GET", "/api/tests/verdicts?id="+id, nil, &v); code != 200 {
			t.Fatalf("GET /api/tests/verdicts: %d", code)
		}
		return v
	}
	v := verdicts()
	if len(v.Verdicts) != 2 || v.Labelled != 0 || v.Unlabelled != 2 {
		t.Fatalf("the verdicts: %+v", v)
	}
	w, e := v.Verdicts[0], v.Verdicts[1]
	if w.ID != "judged.r1.j1" || w.Scenario != "Report" || w.Repeat != 1 || w.Status != "failed" || !w.Passed || e.Passed || e.Agent != "editor" {
		t.Errorf("the verdicts read: %+v %+v", w.Verdict, e.Verdict)
	}
	type reply struct {
		Verdict store.Verdict `json:"verdict"`
	}
	for _, c := range []struct {
		name, id string
		body     any
		headers  []string
		code     int
		label    string // of the verdict, after
	}{
		{"accept the writer's pass", w.ID, map[string]any{"accept": true}, nil, 200, "pass"},
		{"override the editor's fail", e.ID, map[string]any{"label": "pass"}, nil, 200, "pass"},
		{"relabel the editor", e.ID, map[string]any{"label": "fail"}, nil, 200, "fail"},
		{"accept the editor's fail", e.ID, map[string]any{"accept": true}, nil, 200, "fail"},
		{"a label that is no label", w.ID, map[string]any{"label": "maybe"}, nil, 400, ""},
		{"both accept and a label", w.ID, map[string]any{"label": "fail", "accept": true}, nil, 400, ""},
		{"nothing", w.ID, map[string]any{}, nil, 400, ""},
		{"an unknown verdict", "judged.r9.j1", map[string]any{"accept": true}, nil, 404, ""},
		{"without the token", w.ID, map[string]any{"label": "fail"}, []string{"X-Ensemble-Token", ""}, 403, ""},
		{"from another Host", w.ID, map[string]any{"label": "fail"}, []string{"Host", "evil.example:80"}, 403, ""},
	} {
		var r reply
		var out any
		if c.code == 200 {
			out = &r
		}
		if code := f.do(t, "POST", "/api/tests/verdict?id="+c.id, c.body, out, c.headers...); code != c.code {
			t.Errorf("%s: %d, want %d", c.name, code, c.code)
		}
		if c.code == 200 && r.Verdict.Label != c.label {
			t.Errorf("%s: labelled %q, want %q", c.name, r.Verdict.Label, c.label)
		}
	}
	v = verdicts()
	if v.Labelled != 2 || v.Unlabelled != 0 || v.Verdicts[0].Label != "pass" || v.Verdicts[1].Label != "fail" || v.Verdicts[0].Labelled.IsZero() {
		t.Errorf("after the labels (the refused requests change nothing): %+v %+v", v.Verdicts[0].Verdict, v.Verdicts[1].Verdict)
	}
	if code := f.do(t, "GET", "/api/tests/verdicts?id=nope", nil, nil); code != 404 {
		t.Errorf("the verdicts of an unknown test run: %d", code)
	}
	if code := f.do(t, "GET", "/api/tests/verdict?id="+w.ID, nil, nil); code != 405 && code != 404 {
		t.Errorf("a label by GET: %d", code)
	}
}

// The judge review page never parses data as HTML.
func TestJudgesPageWritesNoHTML(t *testing.T) {
	t.Parallel()
	b, err := os.ReadFile(filepath.Join("web", "judges.js"))
	if err != nil {
		t.Fatal(err)
	}
	for _, sink := range []string{"innerHTML", "outerHTML", "insertAdjacentHTML", "document.write", "eval(", "new Function", "srcdoc", "javascript:"} {
		if strings.Contains(string(b), sink) {
			t.Errorf("judges.js uses %s: build elements with el() and textContent", sink)
		}
	}
}

// Judge review in a browser: a test run's page lists its verdicts as
// unlabelled; accepting the writer's and overriding the editor's labels
// them (stored: the page read again shows them), and the counts follow.
func TestBrowserJudgeReview(t *testing.T) {
	t.Parallel()
	b := browsertest.Shared(t)
	path := filepath.Join(t.TempDir(), "runs.db")
	id := saveJudgedTestRun(t, path)
	url := serve(t, path)
	ctx := b.Tab(t)
	writer, editor := `#verdicts [data-verdict="judged.r1.j1"]`, `#verdicts [data-verdict="judged.r1.j2"]`
	do(t, ctx, "the test run's judge review",
		chromedp.Navigate(url),
		chromedp.WaitVisible(css(`#nav-tests`)),
		chromedp.Click(css(`#nav-tests`)),
		chromedp.Click(css(`[data-test-run="`+id+`"] a`)),
		chromedp.WaitVisible(css(`#judge-review [data-field="label-counts"][data-labelled="0"][data-unlabelled="2"]`)),
		chromedp.WaitVisible(css(writer+`[data-label=""][data-judged="pass"]`)),
		chromedp.WaitVisible(css(editor+`[data-label=""][data-judged="fail"]`)),
	)
	if got := text(t, ctx, writer); !strings.Contains(got, "names <b>EMEA</b>") || !strings.Contains(got, "unlabelled") || !strings.Contains(got, "score 5") {
		t.Errorf("the writer's verdict reads %q", got)
	}
	do(t, ctx, "accept the writer's, override the editor's",
		chromedp.Click(css(writer+` [data-action="accept"]`)),
		chromedp.WaitVisible(css(writer+`[data-label="pass"]`)),
		chromedp.Click(css(editor+` [data-action="override"]`)),
		chromedp.WaitVisible(css(editor+`[data-label="pass"]`)),
		chromedp.WaitVisible(css(`#judge-review [data-field="label-counts"][data-labelled="2"][data-unlabelled="0"]`)),
	)
	if got := text(t, ctx, editor+` [data-field="label"]`); got != "labelled pass (overridden)" {
		t.Errorf("the editor's label reads %q", got)
	}
	do(t, ctx, "the page read again",
		eval(`location.reload()`),
		chromedp.WaitVisible(css(writer+`[data-label="pass"]`)),
		chromedp.WaitVisible(css(editor+`[data-label="pass"]`)),
	)
	if got := text(t, ctx, writer+` [data-field="label"]`); got != "labelled pass (accepted)" {
		t.Errorf("the writer's label reads %q", got)
	}
	db, err := store.Open(path, false, store.SyncNormal)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if v, err := db.Verdict("judged.r1.j2"); err != nil || v.Label != store.LabelPass {
		t.Errorf("the editor's verdict stored: %+v, %v", v, err)
	}
}
