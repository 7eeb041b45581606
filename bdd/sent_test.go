package bdd

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/ensemble-run/ensemble/agent"
	"github.com/ensemble-run/ensemble/kinds"
)

// heldModel is a model server of the OpenAI wire format that counts the
// requests it receives. It holds the first `hold` requests: the first is
// answered "no" once all of them have arrived, the others only end when
// their client gives up on them (an early stop cancels their runs). Later
// requests are answered at once: "no" to a system prompt starting with
// SLOW, "yes" to any other.
type heldModel struct {
	srv      *httptest.Server
	hold     int
	received atomic.Int64
	once     sync.Once
	all      chan struct{} // closed when the held requests have all arrived
}

func newHeldModel(t *testing.T, hold int) *heldModel {
	m := &heldModel{hold: hold, all: make(chan struct{})}
	m.srv = httptest.NewServer(http.HandlerFunc(m.serve))
	t.Cleanup(m.srv.Close)
	return m
}

func (m *heldModel) serve(w http.ResponseWriter, r *http.Request) {
	n := int(m.received.Add(1))
	var req struct {
		Messages []struct {
			Role    string `json:"role"`
			Content any    `json:"content"`
		} `json:"messages"`
	}
	body, _ := io.ReadAll(io.LimitReader(r.Body, 1<<20))
	if err := json.Unmarshal(body, &req); err != nil {
		http.Error(w, `{"error": {"message": "bad request"}}`, http.StatusBadRequest)
		return
	}
	reply := "yes"
	for _, msg := range req.Messages {
		if s, _ := msg.Content.(string); msg.Role == "system" && strings.HasPrefix(s, "SLOW") {
			reply = "no"
		}
	}
	if n == m.hold {
		m.once.Do(func() { close(m.all) })
	}
	switch {
	case n == 1:
		select {
		case <-m.all:
		case <-r.Context().Done():
			return
		}
	case n <= m.hold:
		<-r.Context().Done()
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]any{
		"id": "c1", "object": "chat.completion", "created": 1, "model": "m",
		"choices": []any{map[string]any{"index": 0, "finish_reason": "stop", "message": map[string]any{"role": "assistant", "content": reply}}},
		"usage":   map[string]any{"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
	})
}

const heldEnsemble = `name: held
models:
  m: {provider: openai, model: m, base_url: "${TEST_LLM_URL}"}
agents:
  - name: answer
    model_profile: m
    prompt: SLOW. Answer yes or no.
`

const quickEnsemble = `name: quick
models:
  m: {provider: openai, model: m, base_url: "${TEST_LLM_URL}"}
agents:
  - name: answer
    model_profile: m
    prompt: Answer yes or no.
`

// heldFeature: the first scenario fails on its first run, which ends its
// verdict while its other runs wait on the model; the second passes.
const heldFeature = `Feature: held
  Scenario: slow and wrong
    Given the ensemble "held.yaml"
    When the ensemble runs
    Then the output of agent "answer" is "yes"

  Scenario: quick and right
    Given the ensemble "quick.yaml"
    When the ensemble runs
    Then the output of agent "answer" is "yes"
`

var requestsLine = regexp.MustCompile(`, (\d+) model requests`)

// An early stop cancels the runs in flight; the requests they sent count,
// in the summary and in --max-requests, as the model server counts them:
// with --repeat 20 --concurrency 4 the first scenario's four runs send four
// requests, the first fails the scenario (a pass rate of 1) and the other
// three are cancelled with their request at the server.
func TestRequestsCountedAsSent(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name        string
		maxRequests int
		code        int
		summary     int // the requests the summary says
	}{
		// 4 requests of the first scenario, then 20 of the second.
		{"early stop", 0, ExitFailed, 24},
		// The four requests sent reach the cap: the second scenario
		// never starts.
		{"--max-requests", 4, ExitBudget, 4},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			m := newHeldModel(t, 4)
			dir := writeTempFiles(t, map[string]string{"held.yaml": heldEnsemble, "quick.yaml": quickEnsemble, "a.feature": heldFeature})
			env := map[string]string{"TEST_LLM_URL": m.srv.URL + "/v1"}
			lookup := func(k string) (string, bool) { v, ok := env[k]; return v, ok }
			live := kinds.Builtin().Runner(&agent.Host{LookupEnv: lookup}, nil)
			opts := Options{LookupEnv: lookup, LLM: live, Simulate: live.Simulator(), GuardModels: true, LiveAll: true}
			o := runRepeats(t, RunOptions{Options: opts, Paths: []string{filepath.Join(dir, "a.feature")},
				Repeats: Repeats{Repeat: 20, Concurrency: 4, PassRate: rate(1), MaxRequests: tc.maxRequests}})
			got := requestsLine.FindStringSubmatch(o.out)
			if got == nil {
				t.Fatalf("no requests in the summary:\n%s", o.out)
			}
			n, _ := strconv.Atoi(got[1])
			server := int(m.received.Load())
			if o.code != tc.code || n != server || n != tc.summary {
				t.Fatalf("exit %d (want %d); the summary says %d model requests, the server received %d (want %d):\n%s",
					o.code, tc.code, n, server, tc.summary, o.out)
			}
			if tc.maxRequests > 0 && !strings.Contains(o.out, "stopped starting runs: --max-requests 4 reached (4 model requests made)") {
				t.Fatalf("the guard:\n%s", o.out)
			}
		})
	}
}
