package serve_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ensemble-run/ensemble/serve"
)

// A delivery the server had not made when it stopped (its receiver was
// down) is made by the server started again on the same database: with
// the body it had, signed, and recorded in its run's events. Before the
// outbox, a person told by a webhook that a run waits for them was never
// told, if the server restarted meanwhile.
func TestDeliveriesOutliveARestart(t *testing.T) {
	t.Parallel()
	var up atomic.Bool
	var mu sync.Mutex
	var got [][]byte
	recv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		if !up.Load() {
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		if r.Header.Get(serve.SignatureHeader) != serve.Sign([]byte(secret), b) {
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		mu.Lock()
		got = append(got, b)
		mu.Unlock()
	}))
	defer recv.Close()
	dir := ensembles(t)
	tune := func(o *serve.Options) { o.WebhookAttempts, o.WebhookBackoff = 1000, 20*time.Millisecond }
	s := startServer(t, dir, tune)
	r := s.start(t, "ask", map[string]any{"webhook": recv.URL + "/hook"})
	if r.Status != "awaiting_input" {
		t.Fatalf("%+v", r)
	}
	outbox := filepath.Join(dir, "serve.db.serve", "outbox")
	waitFor(t, "a delivery in the outbox", func() bool {
		entries, _ := os.ReadDir(outbox)
		return len(entries) > 0
	})
	s.stop()
	if entries, _ := os.ReadDir(outbox); len(entries) != 1 {
		t.Fatalf("the outbox after the stop: %v", entries)
	}

	up.Store(true)
	s = startServer(t, dir, tune)
	waitFor(t, "the delivery after the restart", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(got) == 1
	})
	var hook serve.Webhook
	if err := json.Unmarshal(got[0], &hook); err != nil || hook.RunID != r.RunID || hook.Status != "awaiting_input" {
		t.Fatalf("delivery %s", got[0])
	}
	waitFor(t, "the outbox emptied", func() bool {
		entries, _ := os.ReadDir(outbox)
		return len(entries) == 0
	})
	if types := s.eventTypes(t, r.RunID); !slices.Contains(types, "webhook_failed") || !slices.Contains(types, "webhook_delivered") {
		t.Errorf("the run's events: %v", types)
	}
}

// waitFor polls cond until it holds, for as long as a loaded machine may
// need.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(patience); !cond(); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("waited for %s", what)
		}
	}
}
