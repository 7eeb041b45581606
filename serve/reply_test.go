package serve_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"net/http"
	"reflect"
	"strconv"
	"strings"
	"testing"
)

// The answer of a waited POST is what json.Marshal writes of it, though
// written by hand around the result's own compact bytes: for a run that
// ended in the server and for one read back (a fork), its result the
// compact form of what GET /v1/runs/ID answers.
func TestReplyResultIsMarshal(t *testing.T) {
	t.Parallel()
	s := startServer(t, ensembles(t), nil)
	check := func(what string, code int, b []byte) json.RawMessage {
		t.Helper()
		var rr struct {
			RunID  string          `json:"run_id"`
			Status string          `json:"status"`
			Result json.RawMessage `json:"result,omitempty"`
		}
		if err := json.Unmarshal(b, &rr); err != nil || code != http.StatusCreated || len(rr.Result) == 0 {
			t.Fatalf("%s: %d %v %s", what, code, err, b)
		}
		want, err := json.Marshal(rr)
		if err != nil || !bytes.Equal(b, append(want, '\n')) {
			t.Fatalf("%s:\n%s\njson.Marshal:\n%s", what, b, want)
		}
		// the same object as the saved run's (but its duration, which the
		// run returned before its end was saved)
		code, got, _ := s.do(t, "GET", "/v1/runs/"+rr.RunID, nil)
		var a, c map[string]any
		if err := errors.Join(json.Unmarshal(rr.Result, &a), json.Unmarshal(got, &c)); err != nil || code != http.StatusOK {
			t.Fatalf("%s: %d %v", what, code, err)
		}
		delete(a, "duration_seconds")
		delete(c, "duration_seconds")
		if !reflect.DeepEqual(a, c) {
			t.Fatalf("%s: the result\n%s\nGET /v1/runs/ID\n%s", what, rr.Result, got)
		}
		return rr.Result
	}
	code, b, _ := s.do(t, "POST", "/v1/ensembles/count/runs", map[string]any{"input": "<a & b>", "run_id": "r1"}, "Prefer", "wait=60")
	if res := check("a new run", code, b); !bytes.Contains(res, []byte(`\u003ca \u0026 b\u003e`)) {
		t.Fatalf("the input is not in the result: %s", res)
	}
	code, b, _ = s.do(t, "POST", "/v1/runs/r1/fork", map[string]any{"from_turn": 1}, "Prefer", "wait=60")
	check("a fork", code, b)
}

// The answer of a waited POST says its length, even past the 2 KiB net/http
// measures by itself: it goes out in one piece, not chunked.
func TestReplyResultHasLength(t *testing.T) {
	t.Parallel()
	s := startServer(t, ensembles(t), nil)
	input := strings.Repeat("a long input ", 400)
	code, b, h := s.do(t, "POST", "/v1/ensembles/count/runs", map[string]any{"input": input}, "Prefer", "wait=60")
	if code != http.StatusCreated || len(b) < 4<<10 {
		t.Fatalf("%d, %d bytes", code, len(b))
	}
	if got := h.Get("Content-Length"); got != strconv.Itoa(len(b)) {
		t.Fatalf("Content-Length %q for %d bytes (Transfer-Encoding %q)", got, len(b), h.Get("Transfer-Encoding"))
	}
}

// A new run's run_completed event carries, byte for byte, the result the
// waited POST answers with (written once for both), and its events are
// numbered 1, 2, ... with nothing missing once the run is over.
func TestRunCompletedCarriesTheAnswer(t *testing.T) {
	t.Parallel()
	s := startServer(t, ensembles(t), nil)
	code, b, _ := s.do(t, "POST", "/v1/ensembles/count/runs", map[string]any{"input": "<a & b>"}, "Prefer", "wait=60")
	var rr struct {
		RunID  string          `json:"run_id"`
		Result json.RawMessage `json:"result"`
	}
	if err := json.Unmarshal(b, &rr); err != nil || code != http.StatusCreated || len(rr.Result) == 0 {
		t.Fatalf("%d %v %s", code, err, b)
	}
	ids, data, _ := s.sse(t, rr.RunID)
	for i, id := range ids {
		if id != i+1 {
			t.Fatalf("event ids %v", ids)
		}
	}
	var last struct {
		Type   string          `json:"type"`
		Result json.RawMessage `json:"result"`
	}
	if len(data) == 0 || json.Unmarshal([]byte(data[len(data)-1]), &last) != nil || last.Type != "run_completed" {
		t.Fatalf("the last event is not run_completed: %q", data)
	}
	if !bytes.Equal(last.Result, rr.Result) {
		t.Fatalf("run_completed's result\n%s\nthe answer's\n%s", last.Result, rr.Result)
	}
}
