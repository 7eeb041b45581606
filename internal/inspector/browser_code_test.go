package inspector_test

import (
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/ensemble-run/ensemble/internal/browsertest"
	"github.com/ensemble-run/ensemble/internal/inspector"
)

// The page opened by ui --open (a one-time code, no token) exchanges the
// code for its cookie and shows the runs, also after a reload; the same
// link opened again is refused.
func TestBrowserOneTimeCode(t *testing.T) {
	t.Parallel()
	b := browsertest.Shared(t)
	needPython(t)
	db := filepath.Join(t.TempDir(), "runs.db")
	ens, resp := example("approval")
	run := saveExampleRun(t, db, ens, resp, "completed")
	srv, err := inspector.New(inspector.Options{DBs: []string{db}})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(srv.Handler())
	t.Cleanup(func() {
		ts.Close()
		srv.Close()
	})
	link := srv.OpenURL(ts.Listener.Addr().String())
	if strings.Contains(link, srv.Token()) {
		t.Fatalf("the link %s holds the token", link)
	}
	row := `[data-run-id="` + run.ID + `"]`
	ctx := b.Tab(t)
	do(t, ctx, "the runs list, by the code",
		chromedp.Navigate(link),
		chromedp.WaitVisible(css(row)),
		chromedp.Reload(),
		chromedp.WaitVisible(css(row)),
	)
	other := b.Tab(t)
	do(t, other, "the link again, in a new tab",
		chromedp.Navigate(link),
		chromedp.WaitVisible(css(`#main .error`)),
	)
	if msg := text(t, other, `#main .error`); !strings.Contains(msg, "used already") {
		t.Errorf("the link opened again says %q", msg)
	}
}
