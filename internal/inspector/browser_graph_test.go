package inspector_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/ensemble-run/ensemble/internal/benchdata"
	"github.com/ensemble-run/ensemble/internal/browsertest"
)

// saveLayered saves a run of testdata/layered (seven agents in five
// layers) in db.
func saveLayered(t testing.TB, db string) benchdata.Saved {
	t.Helper()
	dir := filepath.Join("testdata", "layered")
	return saveExampleRun(t, db, filepath.Join(dir, "ensemble.yaml"), filepath.Join(dir, "responses.yaml"), "completed")
}

// geometry is where the graph's SVG and its agents' nodes are on the
// page: left, top, right, bottom.
type geometry struct {
	SVG     [4]float64            `json:"svg"`
	ViewBox [4]float64            `json:"viewBox"`
	Nodes   map[string][4]float64 `json:"nodes"`
}

const geometryJS = `(() => {
  const svg = document.querySelector('[data-field="graph"]');
  const box = (e) => { const r = e.getBoundingClientRect(); return [r.left, r.top, r.right, r.bottom]; };
  const out = { svg: box(svg), viewBox: svg.getAttribute("viewBox").split(" ").map(Number), nodes: {} };
  for (const n of svg.querySelectorAll("foreignObject > .fo > .node")) out.nodes[n.dataset.agent] = box(n);
  return JSON.stringify(out);
})()`

func graphGeometry(t *testing.T, ctx context.Context) geometry {
	t.Helper()
	s, err := chromedp.Run(ctx, chromedp.Evaluate[string](geometryJS))
	if err != nil {
		t.Fatal(err)
	}
	var g geometry
	if err := json.Unmarshal([]byte(s), &g); err != nil {
		t.Fatal(err)
	}
	return g
}

// The graph of a seven-agent ensemble at 1400 pixels: in layers (the
// agents that run together share a column), every node inside the SVG
// once fitted, edges labelled, and zoom and fit change what it shows.
func TestBrowserLayeredGraph(t *testing.T) {
	t.Parallel()
	b := browsertest.Shared(t)
	db := filepath.Join(t.TempDir(), "runs.db")
	run := saveLayered(t, db)
	url := serve(t, db)
	ctx := b.Tab(t)
	do(t, ctx, "the graph",
		chromedp.EmulateViewport(1400, 900),
		chromedp.Navigate(url+"#/run/0/"+run.ID),
		chromedp.WaitVisible(css(`[data-field="graph"] [data-agent="report"][data-status="completed"]`)),
		chromedp.WaitVisible(css(`[data-field="graph"] [data-agent="review"][data-status="skipped"]`)),
	)
	g := graphGeometry(t, ctx)
	if len(g.Nodes) != 7 {
		t.Fatalf("the graph shows %d nodes, want 7: %v", len(g.Nodes), g.Nodes)
	}
	for name, n := range g.Nodes {
		if n[0] < g.SVG[0]-1 || n[1] < g.SVG[1]-1 || n[2] > g.SVG[2]+1 || n[3] > g.SVG[3]+1 {
			t.Errorf("%s at %v is not inside the graph's %v", name, n, g.SVG)
		}
		if n[2]-n[0] < 40 {
			t.Errorf("%s is %.0f pixels wide: too small to read", name, n[2]-n[0])
		}
	}
	left := func(name string) float64 { return g.Nodes[name][0] }
	for _, same := range []string{"test", "review"} {
		if math.Abs(left(same)-left("lint")) > 1 {
			t.Errorf("%s is at x %.0f, lint at %.0f: they run together, in one column", same, left(same), left("lint"))
		}
	}
	order := []string{"fetch", "parse", "lint", "fix", "report"}
	for i := 1; i < len(order); i++ {
		if left(order[i]) <= left(order[i-1]) {
			t.Errorf("%s (x %.0f) is not right of %s (x %.0f)", order[i], left(order[i]), order[i-1], left(order[i-1]))
		}
	}
	labels := map[string]string{
		"parse>lint":  "select: output.files",
		"lint>fix":    "context.lint != 'clean'",
		"review>fix":  "optional",
		"test>report": "on failure",
	}
	for edge, want := range labels {
		if got := text(t, ctx, `[data-edge-label="`+edge+`"]`); !strings.Contains(got, want) {
			t.Errorf("the label of %s is %q, want %q", edge, got, want)
		}
	}
	if got := text(t, ctx, `[data-agent="review"] [data-when]`); got != "when: context.parse.risky == true" {
		t.Errorf("review's guard reads %q", got)
	}
	// Zoom in, by a button and by the wheel, then fit again.
	do(t, ctx, "zoom in", chromedp.Click(css(`[data-graph="in"]`)), chromedp.WaitVisible(css(`svg[data-zoomed="true"]`)))
	in := graphGeometry(t, ctx)
	if in.ViewBox[2] >= g.ViewBox[2] {
		t.Errorf("zoomed in, the view is %v, fitted %v: want it narrower", in.ViewBox, g.ViewBox)
	}
	do(t, ctx, "the wheel", eval(`(() => { const s = document.querySelector('[data-field="graph"]'); const r = s.getBoundingClientRect();
		s.dispatchEvent(new WheelEvent("wheel", { deltaY: -300, clientX: r.left + 50, clientY: r.top + 30, bubbles: true, cancelable: true })); })()`))
	wheeled := graphGeometry(t, ctx)
	if wheeled.ViewBox[2] >= in.ViewBox[2] {
		t.Errorf("after the wheel, the view is %v, before %v: want it narrower", wheeled.ViewBox, in.ViewBox)
	}
	do(t, ctx, "fit", chromedp.Click(css(`[data-graph="fit"]`)), chromedp.WaitVisible(css(`svg[data-zoomed="false"]`)))
	if fit := graphGeometry(t, ctx); fit.ViewBox != g.ViewBox {
		t.Errorf("fitted again, the view is %v, want %v", fit.ViewBox, g.ViewBox)
	}
}

// An execution's link opens it, on a reload too; choosing an execution
// puts its link in the address bar; a turn's link marks the turn.
func TestBrowserLinks(t *testing.T) {
	t.Parallel()
	b := browsertest.Shared(t)
	db := filepath.Join(t.TempDir(), "runs.db")
	run := saveLayered(t, db)
	url := serve(t, db)
	ctx := b.Tab(t)
	for _, step := range []string{"the link", "a reload"} {
		act := chromedp.Navigate(url + "#/run/0/" + run.ID + "/lint/1")
		if step == "a reload" {
			act = chromedp.Reload()
		}
		do(t, ctx, step, act, chromedp.WaitVisible(css(`#execution [data-field="output"]`)))
		if h := text(t, ctx, `#execution h2`); !strings.Contains(h, "lint · execution 1") {
			t.Errorf("%s: the panel's heading is %q, want lint's first execution", step, h)
		}
		if out := text(t, ctx, `#execution [data-field="output"]`); out != "two warnings" {
			t.Errorf("%s: lint's output reads %q", step, out)
		}
	}
	do(t, ctx, "report in the timeline", chromedp.Click(css(`[data-execution="report#1"]`)),
		chromedp.WaitVisible(css(`#execution[data-shown="report#1"]`)))
	loc, err := chromedp.Run(ctx, chromedp.Location())
	if err != nil {
		t.Fatal(err)
	}
	if _, hash, _ := strings.Cut(loc, "#"); !strings.HasPrefix(hash, "/run/0/"+run.ID+"/report/1/") {
		t.Errorf("the address is %s, want report's execution's link", loc)
	}
	do(t, ctx, "back", eval(`history.back()`), chromedp.WaitVisible(css(`#execution[data-shown="lint#1"]`)))
	do(t, ctx, "a turn's link",
		chromedp.Navigate(url+"#/run/0/"+run.ID+"/turn:3"),
		chromedp.WaitVisible(css(`.turn.target[data-turn="3"]`)))
}

// A link to a turn of a long run past its first page opens that page.
func TestBrowserLinkToALateTurn(t *testing.T) {
	t.Parallel()
	b := browsertest.Shared(t)
	run, err := benchdata.SaveLoop(t.Context(), t.TempDir(), 300, 0) // 601 turns
	if err != nil {
		t.Fatal(err)
	}
	url := serve(t, run.DB)
	ctx := b.Tab(t)
	do(t, ctx, "turn 400",
		chromedp.Navigate(url+"#/run/0/"+run.ID+"/turn:400"),
		chromedp.WaitVisible(css(`.turn.target[data-turn="400"]`)),
		chromedp.WaitNotPresent(css(`[data-turn="1"]`)))
	if n := turnsShown(t, ctx); n > 60 {
		t.Errorf("the page shows %d turns, want a page of them", n)
	}
}

// The search of a run finds a text in an output and an input, and a
// match opens its execution.
func TestBrowserSearch(t *testing.T) {
	t.Parallel()
	b := browsertest.Shared(t)
	db := filepath.Join(t.TempDir(), "runs.db")
	run := saveLayered(t, db)
	url := serve(t, db)
	ctx := b.Tab(t)
	do(t, ctx, "the search",
		chromedp.Navigate(url+"#/run/0/"+run.ID),
		chromedp.WaitVisible(css(`#search [data-field="search"]`)),
		chromedp.SendKeys(css(`#search [data-field="search"]`), "needle-IN-the"),
		chromedp.Click(css(`#search button[type="submit"]`)),
		chromedp.WaitVisible(css(`#search [data-match="fetch#1"][data-match-field="output"]`)),
		chromedp.WaitVisible(css(`#search [data-match="parse#1"][data-match-field="input"]`)),
	)
	if s := text(t, ctx, `#search [data-field="search-status"]`); !strings.HasPrefix(s, "2 matches") {
		t.Errorf("the search says %q, want 2 matches", s)
	}
	if m := text(t, ctx, `#search li mark`); m != "needle-in-the" {
		t.Errorf("the match marked is %q", m)
	}
	do(t, ctx, "the match", chromedp.Click(css(`#search [data-match="fetch#1"]`)), chromedp.WaitVisible(css(`#execution[data-shown="fetch#1"]`)))
	if out := text(t, ctx, `#execution [data-field="output"]`); !strings.Contains(out, "needle-in-the-output") {
		t.Errorf("fetch's output reads %q", out)
	}
}

// Each agent's time, tokens and cost across the runs of its ensemble: a
// bar a run.
func TestBrowserAcrossRuns(t *testing.T) {
	t.Parallel()
	b := browsertest.Shared(t)
	db := filepath.Join(t.TempDir(), "runs.db")
	saveLayered(t, db)
	run := saveLayered(t, db)
	url := serve(t, db)
	ctx := b.Tab(t)
	do(t, ctx, "the chart",
		chromedp.Navigate(url+"#/run/0/"+run.ID),
		chromedp.Click(css(`#across summary`)),
		// A click lands where the summary was when it was aimed: the cards
		// above it, still loading on a slow machine, may have moved it
		// since. Until the card is open, its summary is clicked again.
		opened(`#across`),
		chromedp.WaitVisible(css(`svg[data-chart-agent="fix"] rect[data-run="`+run.ID+`"]`)),
		chromedp.Click(css(`[data-metric="tokens"]`)),
		chromedp.WaitVisible(css(`[data-metric="tokens"][aria-pressed="true"]`)),
	)
	n, err := chromedp.Run(ctx, chromedp.Evaluate[int](`document.querySelectorAll('svg[data-chart-agent="fix"] rect[data-run]').length`))
	if err != nil || n != 2 {
		t.Errorf("fix's chart has %d bars (%v), want one for each of the 2 runs", n, err)
	}
	if got := text(t, ctx, `[data-across-agent="fix"]`); !strings.Contains(got, fmt.Sprintf("over %d runs", 2)) {
		t.Errorf("fix's row reads %q", got)
	}
}

// A loop's edge back (user_clarification sends llm_analyzer again) goes
// under the graph, and every node stays inside it.
func TestBrowserLoopGraph(t *testing.T) {
	t.Parallel()
	b := browsertest.Shared(t)
	needPython(t)
	db := filepath.Join(t.TempDir(), "runs.db")
	ens, resp := example("iterative-analysis")
	run := saveExampleRun(t, db, ens, resp, "completed")
	url := serve(t, db)
	ctx := b.Tab(t)
	do(t, ctx, "the graph",
		chromedp.EmulateViewport(1000, 800),
		chromedp.Navigate(url+"#/run/0/"+run.ID),
		chromedp.WaitVisible(css(`path.edge.back[data-edge="user_clarification>llm_analyzer"]`)),
	)
	g := graphGeometry(t, ctx)
	for name, n := range g.Nodes {
		if n[0] < g.SVG[0]-1 || n[1] < g.SVG[1]-1 || n[2] > g.SVG[2]+1 || n[3] > g.SVG[3]+1 {
			t.Errorf("%s at %v is not inside the graph's %v", name, n, g.SVG)
		}
	}
	// The edge back is under every node.
	edge, err := chromedp.Run(ctx, chromedp.Evaluate[[]float64](`(() => { const r = document.querySelector('[data-edge="user_clarification>llm_analyzer"]').getBoundingClientRect(); return [r.top, r.bottom]; })()`))
	if err != nil {
		t.Fatal(err)
	}
	for name, n := range g.Nodes {
		if edge[1] <= n[3] {
			t.Errorf("the edge back ends at y %.0f, above the bottom of %s (%.0f)", edge[1], name, n[3])
		}
	}
}

// The link of an execution of a child's child (its path, its place in the
// execution that ran it, and that execution's turn) opens it.
func TestBrowserLinkToAChildExecution(t *testing.T) {
	t.Parallel()
	b := browsertest.Shared(t)
	needPython(t)
	db := filepath.Join(t.TempDir(), "runs.db")
	run := saveExampleRun(t, db, filepath.Join("testdata", "deep", "ensemble.yaml"), "", "completed")
	url := serve(t, db)
	ctx := b.Tab(t)
	do(t, ctx, "outer/step/count's second execution, chosen",
		chromedp.Navigate(url+"#/run/0/"+run.ID),
		chromedp.Click(css(`[data-turn="1"] [data-execution="outer#1"]`)),
		chromedp.Click(css(`#execution [data-execution="outer/step#2"]`)),
		chromedp.Click(css(`#execution [data-execution="outer/step/count#2"]`)),
		chromedp.WaitVisible(css(`#execution[data-shown="outer/step/count#2"]`)),
	)
	loc, err := chromedp.Run(ctx, chromedp.Location())
	if err != nil {
		t.Fatal(err)
	}
	if _, hash, _ := strings.Cut(loc, "#"); hash != "/run/0/"+run.ID+"/outer%2Fstep%2Fcount/2/1" {
		t.Fatalf("the address is %s", loc)
	}
	other := b.Tab(t)
	do(t, other, "the link, in another tab", chromedp.Navigate(loc), chromedp.WaitVisible(css(`#execution[data-shown="outer/step/count#2"]`)))
	if h := text(t, other, `#execution h2`); !strings.Contains(h, "outer/step/count · 2 of 2") {
		t.Errorf("the panel's heading is %q", h)
	}
}

// opened waits until the details element sel is open, clicking its
// summary again (in the page, not where the mouse was aimed) while it is
// not.
func opened(sel string) chromedp.Action[chromedp.Void] {
	return chromedp.Func(func(ctx context.Context, t *chromedp.Target) error {
		expr := `(() => { const d = document.querySelector(` + strconv.Quote(sel) + `);
			if (d && !d.open) d.querySelector("summary").click();
			return d && d.open; })()`
		_, err := chromedp.Poll[bool](expr, chromedp.WithPollingInterval(200*time.Millisecond), chromedp.WithPollingTimeout(2*time.Minute))(ctx, t)
		return err
	})
}
