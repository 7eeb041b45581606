package browsertest_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/ensemble-run/ensemble/internal/browsertest"
)

func TestMain(m *testing.M) {
	code := m.Run()
	browsertest.Close()
	os.Exit(code)
}

// The shared browser loads a page, runs its script and reports what the
// script wrote; two tabs run side by side.
func TestBrowserRunsAPage(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, `<!doctype html><p id="in">%s</p><p id="out"></p>
<script>document.getElementById("out").dataset.done = "1";
document.getElementById("out").textContent = document.getElementById("in").textContent.toUpperCase();</script>`, r.URL.Query().Get("say"))
	}))
	t.Cleanup(srv.Close)
	b := browsertest.Shared(t)
	for _, say := range []string{"hello", "bonjour"} {
		t.Run(say, func(t *testing.T) {
			t.Parallel()
			ctx := b.Tab(t)
			if err := chromedp.Do(ctx,
				chromedp.Navigate(srv.URL+"/?say="+say),
				chromedp.WaitVisible(chromedp.CSS(`#out[data-done="1"]`)),
			); err != nil {
				t.Fatal(err)
			}
			got, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(`#out`)))
			if err != nil {
				t.Fatal(err)
			}
			if want := map[string]string{"hello": "HELLO", "bonjour": "BONJOUR"}[say]; got != want {
				t.Errorf("page says %q, want %q", got, want)
			}
		})
	}
}
