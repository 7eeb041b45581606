package engine_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	agentpkg "github.com/ensemble-run/ensemble/agent"
	"github.com/ensemble-run/ensemble/engine"
	"github.com/ensemble-run/ensemble/ensemble"
	"github.com/ensemble-run/ensemble/events"
	"github.com/ensemble-run/ensemble/internal/barrier"
	"github.com/ensemble-run/ensemble/state"
)

// spender is a runner whose agents each make n model requests (as an LLM
// agent's tool loop would), reserving each through the request's budget;
// every request uses 10 input and 5 output tokens, at a cost of 1.
type spender struct {
	n    map[string]int
	made atomic.Int64
}

func (s *spender) Run(ctx context.Context, req *agentpkg.Request) *agentpkg.Result {
	res := &agentpkg.Result{Usage: &state.Usage{}, Output: req.Agent.Name}
	for i := 0; i < s.n[req.Agent.Name]; i++ {
		done := func(*state.Usage) {}
		if req.Budget != nil {
			var err error
			if done, err = req.Budget.Reserve(); err != nil {
				res.Err = err
				return res
			}
		}
		s.made.Add(1)
		u := &state.Usage{Requests: 1, InputTokens: 10, OutputTokens: 5, Cost: 1}
		res.Usage.Add(u)
		done(u)
		if ctx.Err() != nil {
			res.Err = ctx.Err()
			return res
		}
	}
	return res
}

func eventsOf(log *events.Log, ty events.Type) []events.Event {
	var out []events.Event
	for _, ev := range log.Events() {
		if ev.Type == ty {
			out = append(out, ev)
		}
	}
	return out
}

func TestBudgetEndsTheRunInsideAnExecution(t *testing.T) {
	t.Parallel()
	e := build(agent("m1", 1), agent("m2", 1, "m1"), agent("m3", 1, "m2"))
	e.Limits.Budget = &ensemble.Budget{MaxRequests: 5}
	run := &spender{n: map[string]int{"m1": 2, "m2": 2, "m3": 2}}
	var log events.Log
	r := engine.New(e, "go", engine.Options{Runner: run, Events: log.Sink()})
	res := r.Run(context.Background())
	if res.CompletionReason != engine.BudgetExceeded || res.ExitCode() != 6 {
		t.Fatalf("reason %q, exit %d", res.CompletionReason, res.ExitCode())
	}
	// m3's second request is refused: its turn is not committed.
	if res.TurnCount != 2 || run.made.Load() != 5 {
		t.Fatalf("turns %d, requests made %d", res.TurnCount, run.made.Load())
	}
	if res.Usage.Requests != 5 || res.Usage.Cost != 5 || res.UsageByAgent["m3"].Requests != 1 || res.UsageByAgent["m1"].Tokens() != 30 {
		t.Fatalf("usage %+v, by agent %v", res.Usage, res.UsageByAgent)
	}
	if len(res.Errors) != 1 || res.Errors[0].AgentName != "m3" || !strings.Contains(res.Errors[0].Message, "max_requests 5 reached") {
		t.Fatalf("errors %+v", res.Errors)
	}
	ev := eventsOf(&log, events.BudgetExceeded)
	if len(ev) != 1 || ev[0].Agent != "m3" || ev[0].Turn != 3 || !strings.Contains(ev[0].Message, "the run's budget is spent") {
		t.Fatalf("budget events %+v", ev)
	}

	f := r.File(res.CompletionReason)
	if !f.Resumable() {
		t.Fatal("a run stopped by its budget is not resumable")
	}
	// Resumed without raising it, it stops again at once.
	res3 := engine.FromFile(e, f, engine.Options{Runner: run}).Run(context.Background())
	if res3.CompletionReason != engine.BudgetExceeded {
		t.Fatalf("resumed without a higher cap: %q", res3.CompletionReason)
	}

	// Resumed with a higher cap, the cut turn plays again and the run ends.
	r2 := engine.FromFile(e, f, engine.Options{Runner: run, Budget: &ensemble.Budget{MaxRequests: 20}})
	res2 := r2.Run(context.Background())
	if res2.CompletionReason != engine.Completed || res2.TurnCount != 3 || res2.ExitCode() != 0 {
		t.Fatalf("resumed: reason %q, turns %d, errors %+v", res2.CompletionReason, res2.TurnCount, res2.Errors)
	}
	// The override is saved with the run: resuming again keeps it.
	if f2 := r2.File(res2.CompletionReason); f2.Options.MaxRequests != 20 {
		t.Fatalf("saved options %+v", f2.Options)
	}
}

func TestAgentBudget(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		budget ensemble.Budget
		want   string
	}{
		{"tokens", ensemble.Budget{MaxTokens: 15}, "max_tokens 15 reached (15 used)"},
		{"requests", ensemble.Budget{MaxRequests: 1}, "max_requests 1 reached (1 made)"},
		{"cost", ensemble.Budget{MaxCost: 0.5}, "max_cost 0.5 reached (1 spent)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			cheap, dear := agent("cheap", 1), agent("dear", 1)
			dear.Budget = &tc.budget
			e := build(cheap, dear)
			run := &spender{n: map[string]int{"cheap": 3, "dear": 3}}
			res := engine.New(e, "", engine.Options{Runner: run}).Run(context.Background())
			if res.CompletionReason != engine.BudgetExceeded {
				t.Fatalf("reason %q", res.CompletionReason)
			}
			var msgs []string
			for _, e := range res.Errors {
				msgs = append(msgs, e.AgentName+": "+e.Message)
			}
			if !strings.Contains(strings.Join(msgs, "\n"), `agent "dear"'s budget is spent: `+tc.want) {
				t.Fatalf("errors:\n%s", strings.Join(msgs, "\n"))
			}
		})
	}
}

// TestBudgetConcurrentRequests: executions that run at once never make more
// requests than max_requests: a reservation counts at once.
func TestBudgetConcurrentRequests(t *testing.T) {
	t.Parallel()
	var agents []*ensemble.Agent
	n := map[string]int{}
	for i := range 10 {
		name := fmt.Sprintf("a%d", i)
		agents = append(agents, agent(name, 1))
		n[name] = 5
	}
	e := build(agents...)
	e.Limits.Budget = &ensemble.Budget{MaxRequests: 7}
	run := &spender{n: n}
	res := engine.New(e, "", engine.Options{Runner: run, Parallel: 10}).Run(context.Background())
	if res.CompletionReason != engine.BudgetExceeded || run.made.Load() != 7 || res.Usage.Requests != 7 {
		t.Fatalf("reason %q, made %d, usage %+v", res.CompletionReason, run.made.Load(), res.Usage)
	}
}

// flaky fails an agent's first failures attempts of each execution.
type flaky struct {
	mu       sync.Mutex
	failures int
	tries    map[string]int
}

func (f *flaky) Run(ctx context.Context, req *agentpkg.Request) *agentpkg.Result {
	f.mu.Lock()
	defer f.mu.Unlock()
	k := fmt.Sprintf("%s#%d", req.Agent.Name, req.Execution)
	f.tries[k]++
	if f.tries[k] <= f.failures {
		return &agentpkg.Result{Err: fmt.Errorf("attempt %d failed", f.tries[k]), Usage: &state.Usage{Requests: 1}}
	}
	return &agentpkg.Result{Output: "ok", Usage: &state.Usage{Requests: 1}}
}

func TestRetry(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name           string
		failures       int
		attempts       int
		wantErr        string
		wantRetries    []int
		wantRequests   int
		wantExecutions int
	}{
		{"succeeds on the third", 2, 3, "", []int{1, 2}, 3, 1},
		{"gives up", 5, 2, "attempt 2 failed (after 2 attempts)", []int{1}, 2, 1},
		{"no retry needed", 0, 3, "", nil, 1, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			a := agent("fetch", 1)
			a.Retry = &ensemble.Retry{Attempts: tc.attempts, Backoff: time.Millisecond}
			var log events.Log
			res := engine.New(build(a), "", engine.Options{Runner: &flaky{failures: tc.failures, tries: map[string]int{}}, Events: log.Sink()}).
				Run(context.Background())
			rec := res.ConversationHistory[0]
			switch {
			case tc.wantErr == "" && rec.Error != nil:
				t.Fatalf("failed: %s", *rec.Error)
			case tc.wantErr != "" && (rec.Error == nil || *rec.Error != tc.wantErr):
				t.Fatalf("error %v, want %q", rec.Error, tc.wantErr)
			}
			var got []int
			for _, ev := range eventsOf(&log, events.AgentRetry) {
				if ev.Agent != "fetch" || ev.Turn != 1 || ev.Execution != 1 || !strings.Contains(ev.Error, "failed") {
					t.Fatalf("retry event %+v", ev)
				}
				got = append(got, ev.Attempt)
			}
			if fmt.Sprint(got) != fmt.Sprint(tc.wantRetries) {
				t.Fatalf("retried attempts %v, want %v", got, tc.wantRetries)
			}
			// Every attempt's requests count: they were made.
			if rec.Usage.Requests != tc.wantRequests || res.AgentExecutionCount["fetch"] != tc.wantExecutions {
				t.Fatalf("usage %+v, executions %d", rec.Usage, res.AgentExecutionCount["fetch"])
			}
		})
	}
}

// TestRetryWithinTheAgentTimeout: the agent's timeout bounds every attempt
// and wait together; a cancelled execution is not tried again.
func TestRetryWithinTheAgentTimeout(t *testing.T) {
	t.Parallel()
	a := agent("slow", 1)
	a.Timeout = 50 * time.Millisecond
	a.Retry = &ensemble.Retry{Attempts: 1000, Backoff: time.Hour}
	var log events.Log
	run := agentpkg.RunnerFunc(func(ctx context.Context, req *agentpkg.Request) *agentpkg.Result {
		return &agentpkg.Result{Err: errors.New("down")}
	})
	res := engine.New(build(a), "", engine.Options{Runner: run, Events: log.Sink()}).Run(context.Background())
	rec := res.ConversationHistory[0]
	if rec.Error == nil || !strings.Contains(*rec.Error, "retry cut short: attempt 1 of 1000 failed") || !strings.Contains(*rec.Error, "agent timeout of 50ms") {
		t.Fatalf("error %v", rec.Error)
	}
	if n := len(eventsOf(&log, events.AgentRetry)); n != 1 {
		t.Fatalf("%d retry events", n)
	}
}

// TestBudgetCountsFanOutInstancesForTheirAgent: the instances of a fan-out
// spend their agent's budget, whatever their number running at once.
func TestBudgetCountsFanOutInstancesForTheirAgent(t *testing.T) {
	t.Parallel()
	each := fan(agent("each", 1), "[1, 2, 3, 4, 5, 6, 7, 8]")
	each.Budget = &ensemble.Budget{MaxRequests: 5}
	run := &spender{n: map[string]int{"each": 1}}
	var log events.Log
	res := engine.New(build(each), "", engine.Options{Runner: run, Parallel: 8, Events: log.Sink()}).Run(context.Background())
	if res.CompletionReason != engine.BudgetExceeded || run.made.Load() != 5 || res.UsageByAgent["each"].Requests != 5 {
		t.Fatalf("reason %q, made %d, by agent %v", res.CompletionReason, run.made.Load(), res.UsageByAgent)
	}
	if ev := eventsOf(&log, events.BudgetExceeded); len(ev) != 1 || ev[0].Agent != "each" {
		t.Fatalf("budget events %+v", ev)
	}
}

// TestRetryNeverRepeatsAQuestionThatWaits: an execution that waits for a
// person's answer is not a failure to try again, even with retry set.
func TestRetryNeverRepeatsAQuestionThatWaits(t *testing.T) {
	t.Parallel()
	a := agent("approve", 1)
	a.Retry = &ensemble.Retry{Attempts: 3, Backoff: time.Millisecond}
	var calls atomic.Int32
	var log events.Log
	res := engine.New(build(a), "", engine.Options{Events: log.Sink(), Runner: agentpkg.RunnerFunc(func(context.Context, *agentpkg.Request) *agentpkg.Result {
		calls.Add(1)
		return &agentpkg.Result{Err: fmt.Errorf("asking: %w", agentpkg.ErrAwaitingInput)}
	})}).Run(context.Background())
	if res.CompletionReason != engine.AwaitingInput || calls.Load() != 1 || len(eventsOf(&log, events.AgentRetry)) != 0 {
		t.Fatalf("completion %q after %d calls, %d retry events", res.CompletionReason, calls.Load(), len(eventsOf(&log, events.AgentRetry)))
	}
}

// An execution held back because the run's state could not be saved is not
// tried again: nothing a retry does saves the state.
func TestRetryNeverRepeatsAnExecutionNotSaved(t *testing.T) {
	t.Parallel()
	a := agent("work", 1)
	a.Retry = &ensemble.Retry{Attempts: 3, Backoff: time.Millisecond}
	var waits atomic.Int32
	var log events.Log
	b := &barrier.Barrier{Wait: func() error { waits.Add(1); return errors.New("disk full") }}
	res := engine.New(build(a), "", engine.Options{Events: log.Sink(), Runner: b.Wrap(agentpkg.RunnerFunc(func(context.Context, *agentpkg.Request) *agentpkg.Result {
		return &agentpkg.Result{Output: "ran"}
	}))}).Run(context.Background())
	if waits.Load() != 1 || len(eventsOf(&log, events.AgentRetry)) != 0 || len(res.Errors) == 0 || !strings.Contains(res.Errors[0].Message, "disk full") {
		t.Fatalf("%d waits, %d retry events, errors %+v", waits.Load(), len(eventsOf(&log, events.AgentRetry)), res.Errors)
	}
}
