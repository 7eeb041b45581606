package inspector_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/ensemble-run/ensemble/internal/benchdata"
	"github.com/ensemble-run/ensemble/internal/browsertest"
)

// firstScreen is what the run view shows first: its graph's agents and
// the first turn of its timeline.
func firstScreen(id string) chromedp.Action[chromedp.Void] {
	return chromedp.Steps(
		chromedp.WaitVisible(css(`#run[data-run-id="`+id+`"] [data-agent="ping"]`)),
		chromedp.WaitVisible(css(`#run[data-run-id="`+id+`"] [data-agent="pong"]`)),
		chromedp.WaitVisible(css(`#run[data-run-id="`+id+`"] [data-turn="1"]`)),
	)
}

// turnsShown is the number of turns the page's timeline holds.
func turnsShown(t testing.TB, ctx context.Context) int {
	t.Helper()
	n, err := chromedp.Run(ctx, chromedp.Evaluate[int](`document.querySelectorAll("[data-turn]").length`))
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// A long run's page holds a page of its turns, not the run: the first
// turns, then more on demand.
func TestBrowserLongRunPages(t *testing.T) {
	t.Parallel()
	b := browsertest.Shared(t)
	const turns = 300 // 601 turns
	run, err := benchdata.SaveLoop(context.Background(), t.TempDir(), turns, 0)
	if err != nil {
		t.Fatal(err)
	}
	url := serve(t, run.DB)
	ctx := b.Tab(t)
	do(t, ctx, "the first screen", chromedp.Navigate(url+"#/run/0/"+run.ID), firstScreen(run.ID))
	first := turnsShown(t, ctx)
	if first < 1 || first >= benchdata.LoopTurns(turns)/2 {
		t.Fatalf("the page shows %d turns of %d at first, want a page of them", first, benchdata.LoopTurns(turns))
	}
	do(t, ctx, "the next page",
		chromedp.Click(css(`[data-page="more"]`)),
		chromedp.WaitVisible(css(fmt.Sprintf(`[data-turn="%d"]`, first+1))),
	)
	if n := turnsShown(t, ctx); n <= first || n >= benchdata.LoopTurns(turns) {
		t.Errorf("after more, the page shows %d turns, want more than %d and fewer than the run's %d", n, first, benchdata.LoopTurns(turns))
	}
	last := benchdata.LoopTurns(turns)
	do(t, ctx, "the last page",
		chromedp.Click(css(`[data-page="last"]`)),
		chromedp.WaitVisible(css(fmt.Sprintf(`[data-turn="%d"]`, last))),
		chromedp.WaitNotPresent(css(`[data-turn="1"]`)),
	)
}

// seenProbe records in window.__seen when the page first shows its first
// screen, in milliseconds from the start of its navigation, by looking at
// every frame the browser draws: injected once the page's HTML is loaded
// (when the first screen shows already, it records the time it is
// injected, later than it showed).
const seenProbe = `(function () {
  const shown = (s) => { const e = document.querySelector(s); return e !== null && e.offsetParent !== null; };
  const look = () => {
    if (shown('#run [data-agent="ping"]') && shown('#run [data-agent="pong"]') && shown('#run [data-turn="1"]')) window.__seen = performance.now();
    else requestAnimationFrame(look);
  };
  look();
})()`

// BenchmarkFirstScreen opens the run view of the saved 2×16,000-turn run
// (32,001 turns: benchdata.SaveLoop) in headless Chromium and waits for its
// first screen: the graph's two agents and the timeline's first turn
// (docs/performance.md, "The inspector": the target is 1 s). Each
// iteration starts from a blank page, so the page's files, its script and
// the API's answers are all timed; the run is saved once, untimed. "cold"
// is a server that has not shown the run yet (started, untimed, for each
// iteration): what a person sees who starts ui and opens the run; "warm"
// is the same server again and again. ms/first-screen is the time until
// chromedp sees the first screen (its queries add to it); ms/in-page the
// time the page itself took, from the start of its navigation until the
// first frame that shows it.
func BenchmarkFirstScreen(b *testing.B) {
	br := browsertest.Shared(b)
	run, err := benchdata.SaveLoop(context.Background(), b.TempDir(), benchdata.LongRunTurns, 0)
	if err != nil {
		b.Fatal(err)
	}
	for _, cold := range []bool{true, false} {
		name := map[bool]string{true: "cold", false: "warm"}[cold]
		b.Run(name, func(b *testing.B) {
			ctx := br.Tab(b)
			url, stop := start(b, run.DB)
			var total time.Duration
			var inPage float64
			n := 0
			for b.Loop() {
				b.StopTimer()
				if cold {
					stop()
					url, stop = start(b, run.DB)
				}
				do(b, ctx, "a blank page", chromedp.Navigate("about:blank"))
				b.StartTimer()
				began := time.Now()
				do(b, ctx, "the first screen", chromedp.Navigate(url+"#/run/0/"+run.ID), eval(seenProbe), firstScreen(run.ID))
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
			b.StopTimer()
			if shown := turnsShown(b, ctx); shown >= benchdata.LoopTurns(benchdata.LongRunTurns)/2 {
				b.Fatalf("the page holds %d turns of the run's %d: it must hold a page of them", shown, benchdata.LoopTurns(benchdata.LongRunTurns))
			}
			stop()
			b.ReportMetric(float64(total.Milliseconds())/float64(n), "ms/first-screen")
			b.ReportMetric(inPage/float64(n), "ms/in-page")
		})
	}
}
