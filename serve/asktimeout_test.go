package serve_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ensemble-run/ensemble/engine"
	"github.com/ensemble-run/ensemble/serve"
)

// timedAsk writes a folder serving "timed": a writer, an approver that
// waits with timeout: 24h and the on_timeout given, then a publisher (in
// the subfolder count/, which counts reads).
func timedAsk(t *testing.T, onTimeout string, extra ...string) string {
	t.Helper()
	top := t.TempDir()
	dir := filepath.Join(top, "count")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	step, err := os.ReadFile("testdata/count/step.py")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "step.py"), step, 0o755); err != nil {
		t.Fatal(err)
	}
	y := "name: timed\ninput: draft\nagents:\n  - name: writer\n    script: step.py\n" +
		"  - name: approver\n    ask: \"Publish it?\"\n    ask_mode: suspend\n    dependencies: [writer]\n    timeout: 24h\n    on_timeout: " + onTimeout + "\n" + strings.Join(extra, "") +
		"  - name: publisher\n    script: step.py\n    dependencies: [approver]\n"
	if err := os.WriteFile(filepath.Join(dir, "ensemble.yaml"), []byte(y), 0o644); err != nil {
		t.Fatal(err)
	}
	return top
}

// skewedClock is the real time plus an offset the test moves.
type skewedClock struct {
	mu     sync.Mutex
	offset time.Duration
}

func (c *skewedClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return time.Now().Add(c.offset)
}
func (c *skewedClock) Skip(d time.Duration) {
	c.mu.Lock()
	c.offset += d
	c.mu.Unlock()
}

func withSkew(c *skewedClock, state string) func(*serve.Options) {
	return func(o *serve.Options) {
		o.Clock, o.TimeoutPoll = c.Now, 10*time.Millisecond
		if state != "" {
			o.State = state
		}
	}
}

// result is run id's result and status.
func (s *server) result(t *testing.T, id string) *engine.Result {
	t.Helper()
	code, b, _ := s.do(t, "GET", "/v1/runs/"+id, nil)
	if code != 200 {
		t.Fatalf("GET run: %d %s", code, b)
	}
	var res engine.Result
	if err := json.Unmarshal(b, &res); err != nil {
		t.Fatalf("%v: %s", err, b)
	}
	return &res
}

// eventTypes are the types of run id's events so far.
func (s *server) eventTypes(t *testing.T, id string) []string {
	t.Helper()
	_, data, _ := s.sse(t, id)
	var out []string
	for _, d := range data {
		var e struct{ Type string }
		json.Unmarshal([]byte(d), &e)
		out = append(out, e.Type)
	}
	return out
}

func has(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// A run whose question times out goes on: answered with on_timeout's
// answer, or failed with ask_timeout naming the agent and the deadline.
func TestServeAskTimeout(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name, onTimeout string
		approver        any
		publisher       bool
		err             string
	}{
		{"answer", "{answer: {approved: false}}", map[string]any{"approved": false}, true, ""},
		{"fail", "fail", nil, false, `ask_timeout: agent "approver" had no answer by `},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			notes := make(chan serve.Notification, 4)
			recv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				var n serve.Notification
				json.NewDecoder(r.Body).Decode(&n)
				notes <- n
			}))
			defer recv.Close()
			dir := timedAsk(t, c.onTimeout, "    notify: {webhook: \""+recv.URL+"\"}\n")
			clock := &skewedClock{}
			s := startServer(t, dir, withSkew(clock, ""))
			run := s.start(t, "timed", map[string]any{})
			if run.Status != "awaiting_input" {
				t.Fatalf("status %q", run.Status)
			}
			res := s.result(t, run.RunID)
			if len(res.PendingInput) != 1 || res.PendingInput[0].Deadline == nil || res.PendingInput[0].Deadline.Before(time.Now().Add(23*time.Hour)) {
				t.Fatalf("pending %+v", res.PendingInput)
			}
			deadline := res.PendingInput[0].Deadline.UTC().Format(time.RFC3339)
			select {
			case n := <-notes:
				if n.Deadline == nil || !n.Deadline.Equal(*res.PendingInput[0].Deadline) {
					t.Errorf("the notification's deadline %v", n.Deadline)
				}
			case <-time.After(patience):
				t.Fatal("no notification")
			}
			clock.Skip(25 * time.Hour)
			s.waitStatus(t, run.RunID, "completed")
			res = s.result(t, run.RunID)
			if _, ran := res.FinalState["publisher"]; ran != c.publisher || !jsonEqual(res.FinalState["approver"], c.approver) {
				t.Errorf("final state %v", res.FinalState)
			}
			switch {
			case c.err == "" && len(res.Errors) > 0:
				t.Errorf("errors %+v", res.Errors)
			case c.err != "" && (len(res.Errors) != 1 || !strings.Contains(res.Errors[0].Message, c.err+deadline)):
				t.Errorf("errors %+v, want %q", res.Errors, c.err+deadline)
			}
			if types := s.eventTypes(t, run.RunID); !has(types, "input_timed_out") {
				t.Errorf("events %v", types)
			}
			if n := counts(t, dir)["draft publisher"]; n != map[bool]int{true: 1}[c.publisher] {
				t.Errorf("publisher ran %d times", n)
			}
		})
	}
}

func jsonEqual(a, b any) bool {
	x, _ := json.Marshal(a)
	y, _ := json.Marshal(b)
	return string(x) == string(y)
}

// A person's answer before the deadline wins: the sweeper, which goes on
// with another run whose question timed out meanwhile, leaves it alone.
func TestServeAskAnsweredBeforeTheDeadline(t *testing.T) {
	t.Parallel()
	dir := timedAsk(t, `{answer: "no"}`)
	clock := &skewedClock{}
	s := startServer(t, dir, withSkew(clock, ""))
	answered := s.start(t, "timed", map[string]any{})
	if code, b, _ := s.do(t, "POST", "/v1/runs/"+answered.RunID+"/answers", map[string]string{"approver": "yes"}); code != 202 {
		t.Fatalf("answer: %d %s", code, b)
	}
	s.waitStatus(t, answered.RunID, "completed")
	other := s.start(t, "timed", map[string]any{"input": "other"})
	clock.Skip(25 * time.Hour)
	s.waitStatus(t, other.RunID, "completed")
	if res := s.result(t, answered.RunID); res.FinalState["approver"] != "yes" || len(res.Errors) > 0 {
		t.Errorf("answered run: %v %v", res.FinalState, res.Errors)
	}
	if types := s.eventTypes(t, answered.RunID); has(types, "input_timed_out") {
		t.Errorf("the answered run timed out: %v", types)
	}
	if res := s.result(t, other.RunID); res.FinalState["approver"] != "no" {
		t.Errorf("other run: %v", res.FinalState)
	}
	if c := counts(t, dir); c["draft publisher"] != 1 || c["other publisher"] != 1 {
		t.Errorf("counts %v", c)
	}
	// An answer after the timeout applied is refused.
	if code, b, _ := s.do(t, "POST", "/v1/runs/"+other.RunID+"/answers", map[string]string{"approver": "late"}); code != 409 {
		t.Errorf("a late answer: %d %s", code, b)
	}
}

// A deadline that passed while no server ran is applied by the next one
// when it starts, once: two servers started at once on the database, and
// a third later, leave the run as the first application did.
func TestServeAskTimeoutAcrossRestarts(t *testing.T) {
	t.Parallel()
	dir := timedAsk(t, `{answer: "no"}`)
	state := filepath.Join(t.TempDir(), "serve.db")
	clock := &skewedClock{}
	s := startServer(t, dir, withSkew(clock, state))
	run := s.start(t, "timed", map[string]any{})
	if run.Status != "awaiting_input" {
		t.Fatalf("status %q", run.Status)
	}
	s.stop()
	clock.Skip(25 * time.Hour)
	a := startServer(t, dir, withSkew(clock, state))
	b := startServer(t, dir, withSkew(clock, state))
	a.waitStatus(t, run.RunID, "completed")
	b.waitStatus(t, run.RunID, "completed")
	a.stop()
	b.stop()
	clock.Skip(25 * time.Hour)
	c := startServer(t, dir, withSkew(clock, state))
	res := c.result(t, run.RunID)
	if res.FinalState["approver"] != "no" || res.AgentExecutionCount["approver"] != 1 || res.AgentExecutionCount["publisher"] != 1 {
		t.Errorf("state %v, executions %v", res.FinalState, res.AgentExecutionCount)
	}
	if n := counts(t, dir)["draft publisher"]; n != 1 {
		t.Errorf("publisher ran %d times", n)
	}
}
