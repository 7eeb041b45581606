package serve_test

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/ensemble-run/ensemble/serve"
)

// eventLines counts the lines of the journal's events.log by run id.
func eventLines(t *testing.T, s *server) map[string]int {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(s.o.State+".serve", "events.log"))
	if err != nil {
		t.Fatal(err)
	}
	n := map[string]int{}
	for _, line := range bytes.Split(b, []byte("\n")) {
		if id, _, ok := bytes.Cut(line, []byte("\t")); ok {
			n[string(id)]++
		}
	}
	return n
}

// The events journal is compacted at start: the events of a run that
// ended past the retention are dropped; those of a run that waits for an
// answer are kept whole, under the same numbers, and it goes on numbering
// after them.
func TestEventsCompactedAtStart(t *testing.T) {
	t.Parallel()
	dir := ensembles(t)
	s := startServer(t, dir, nil) // the default retention: a week
	done := s.start(t, "count", map[string]any{"input": "quick"})
	ask := s.start(t, "ask", map[string]any{"input": "approve me"})
	if done.Status != "completed" || ask.Status != "awaiting_input" {
		t.Fatalf("%+v %+v", done, ask)
	}
	ids, data, _ := s.sse(t, ask.RunID)
	s.stop()
	if n := eventLines(t, s); n[done.RunID] == 0 || n[ask.RunID] != len(ids) {
		t.Fatalf("before: %v", n)
	}

	s = startServer(t, dir, nil) // within the retention: nothing dropped
	if n := eventLines(t, s); n[done.RunID] == 0 {
		t.Fatalf("events within the retention dropped: %v", n)
	}
	s.stop()

	s = startServer(t, dir, func(o *serve.Options) { o.EventsRetention = -1 })
	if n := eventLines(t, s); n[done.RunID] != 0 || n[ask.RunID] != len(ids) {
		t.Fatalf("after: %v", n)
	}
	if got, _, _ := s.sse(t, done.RunID); len(got) != 0 {
		t.Fatalf("the dropped run's stream: %v", got)
	}
	ids2, data2, _ := s.sse(t, ask.RunID)
	if !slices.Equal(ids, ids2) || !slices.Equal(data, data2) {
		t.Fatalf("kept events changed:\n%v %v\n%v %v", ids, data, ids2, data2)
	}
	after, _, _ := s.sse(t, ask.RunID, "Last-Event-ID", strconv.Itoa(len(ids)-1))
	if len(after) != 1 || after[0] != len(ids) {
		t.Fatalf("Last-Event-ID %d: %v", len(ids)-1, after)
	}
	code, b, _ := s.do(t, "POST", "/v1/runs/"+ask.RunID+"/answers", map[string]any{"approver": map[string]any{"approved": true}}, "Prefer", "wait=180")
	if code != 202 || decodeRun(t, b).Status != "completed" {
		t.Fatalf("answer: %d %s", code, b)
	}
	ids3, _, _ := s.sse(t, ask.RunID)
	if len(ids3) <= len(ids) || !slices.Equal(ids3[:len(ids)], ids) || ids3[len(ids)] != len(ids)+1 {
		t.Fatalf("events after the answer: %v (before: %v)", ids3, ids)
	}
}

// While the server runs, a journal grown past EventsMaxSize is compacted.
func TestEventsCompactedWhenLarge(t *testing.T) {
	t.Parallel()
	s := startServer(t, ensembles(t), func(o *serve.Options) { o.EventsRetention, o.EventsMaxSize = -1, 2048 })
	ask := s.start(t, "ask", map[string]any{"input": "approve me"})
	ids, _, _ := s.sse(t, ask.RunID)
	var first string
	deadline := time.Now().Add(patience)
	for i := 0; ; i++ {
		r := s.start(t, "count", map[string]any{"input": "quick " + strconv.Itoa(i)})
		if first == "" {
			first = r.RunID
		}
		n := eventLines(t, s)
		if n[first] == 0 && i > 2 {
			if n[ask.RunID] != len(ids) {
				t.Fatalf("the waiting run's events: %v, want %d", n, len(ids))
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("never compacted: %v", n)
		}
	}
	if ids2, _, _ := s.sse(t, ask.RunID); !slices.Equal(ids, ids2) {
		t.Fatalf("kept events changed: %v %v", ids, ids2)
	}
}
