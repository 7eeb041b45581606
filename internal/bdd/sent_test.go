package bdd

import (
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/ensemble-run/ensemble/internal/fakemodel"
)

// heldModel is a model server of the OpenAI wire format that counts the
// requests it receives. It holds the first `hold` requests: the first is
// answered "no" once all of them have arrived, the others only end when
// their client gives up on them (an early stop cancels their runs). Later
// requests are answered at once: "no" to a system prompt starting with
// SLOW, "yes" to any other.
type heldModel struct {
	srv      *fakemodel.Server
	hold     int
	received atomic.Int64
	once     sync.Once
	all      chan struct{} // closed when the held requests have all arrived
}

func newHeldModel(t *testing.T, hold int) *heldModel {
	m := &heldModel{hold: hold, all: make(chan struct{})}
	m.srv = fakemodel.New(t, m.reply)
	return m
}

func (m *heldModel) reply(r fakemodel.Request) fakemodel.Reply {
	n := int(m.received.Add(1))
	if n == m.hold {
		m.once.Do(func() { close(m.all) })
	}
	switch {
	case n == 1:
		select {
		case <-m.all:
		case <-r.Context.Done():
			return fakemodel.Reply{Hang: true}
		}
	case n <= m.hold:
		return fakemodel.Reply{Hang: true}
	}
	if strings.HasPrefix(r.System, "SLOW") {
		return fakemodel.Reply{Text: "no"}
	}
	return fakemodel.Reply{Text: "yes"}
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
			env := map[string]string{"TEST_LLM_URL": m.srv.URL()}
			lookup := func(k string) (string, bool) { v, ok := env[k]; return v, ok }
			opts := Options{LookupEnv: lookup, Models: true, GuardModels: true, LiveAll: true}
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
