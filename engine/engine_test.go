package engine_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	agentpkg "github.com/ensemble-run/ensemble/agent"
	"github.com/ensemble-run/ensemble/engine"
	"github.com/ensemble-run/ensemble/ensemble"
	"github.com/ensemble-run/ensemble/events"
	"github.com/ensemble-run/ensemble/internal/conditions"
	"github.com/ensemble-run/ensemble/internal/opaque"
	"github.com/ensemble-run/ensemble/kinds"
	scriptkind "github.com/ensemble-run/ensemble/kinds/script"
	"github.com/ensemble-run/ensemble/state"
)

type stateT = state.State

// agent builds a script agent; deps are "name" (required), "?name"
// (optional), and may carry a condition after "|".
func agent(name string, maxTurns int, deps ...string) *ensemble.Agent {
	a := &ensemble.Agent{Name: name, Kind: scriptkind.Kind{}, Conversation: ensemble.Conversation{MaxTurns: maxTurns}}
	for _, d := range deps {
		dep := &ensemble.Dependency{RequiresAll: true}
		if cut, cond, ok := strings.Cut(d, "|"); ok {
			d = cut
			p, err := conditions.Compile(cond)
			if err != nil {
				panic(err)
			}
			dep.Condition, dep.Program = cond, opaque.Make[ensemble.CompiledCondition](p)
		}
		if strings.HasPrefix(d, "?") {
			d, dep.RequiresAll = d[1:], false
		}
		dep.AgentName = d
		a.Dependencies = append(a.Dependencies, dep)
	}
	return a
}

func build(agents ...*ensemble.Agent) *ensemble.Ensemble {
	e := &ensemble.Ensemble{Name: "test", Agents: agents}
	e.Index()
	return e
}

// scripted answers each agent from a function of its request.
type scripted map[string]func(req *agentpkg.Request) (any, error)

func (s scripted) Run(ctx context.Context, req *agentpkg.Request) *agentpkg.Result {
	f, ok := s[req.Agent.Name]
	if !ok {
		return &agentpkg.Result{Output: fmt.Sprintf("%s#%d", req.Agent.Name, req.Execution)}
	}
	out, err := f(req)
	return &agentpkg.Result{Output: out, Err: err, InputData: req.Dependencies}
}

func order(res *engine.Result) []string {
	var names []string
	for _, r := range res.ConversationHistory {
		names = append(names, fmt.Sprintf("%d:%s", r.TurnNumber, r.AgentName))
	}
	return names
}

func TestLinearChain(t *testing.T) {
	t.Parallel()
	e := build(agent("a", 1), agent("b", 1, "a"), agent("c", 1, "b"))
	var seen map[string]any
	run := scripted{"c": func(req *agentpkg.Request) (any, error) { seen = req.Dependencies; return "done", nil }}
	res := engine.New(e, "hello", engine.Options{Runner: run}).Run(context.Background())
	if res.CompletionReason != engine.Completed || res.ExitCode() != 0 {
		t.Fatalf("reason %q exit %d", res.CompletionReason, res.ExitCode())
	}
	if got, want := order(res), []string{"1:a", "2:b", "3:c"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("order %v, want %v", got, want)
	}
	if !reflect.DeepEqual(seen, map[string]any{"b": "b#1"}) {
		t.Fatalf("c was given %v", seen)
	}
	if res.TurnCount != 3 || res.FinalState["c"] != "done" || res.Input != "hello" {
		t.Fatalf("result %+v", res)
	}
}

func TestFailedAgentIsRecordedAndOthersGoOn(t *testing.T) {
	t.Parallel()
	e := build(agent("a", 1), agent("bad", 3, "a"), agent("good", 1, "a"), agent("after", 1, "?bad", "?good"))
	run := scripted{"bad": func(*agentpkg.Request) (any, error) { return nil, errors.New("boom") }}
	res := engine.New(e, "", engine.Options{Runner: run}).Run(context.Background())
	if res.CompletionReason != engine.Completed || res.ExitCode() != engine.ExitFailed {
		t.Fatalf("reason %q exit %d", res.CompletionReason, res.ExitCode())
	}
	// bad failed once and was not retried on the same input despite max_turns 3.
	if res.AgentExecutionCount["bad"] != 1 {
		t.Fatalf("bad ran %d times", res.AgentExecutionCount["bad"])
	}
	if _, ok := res.FinalState["bad"]; ok {
		t.Fatal("a failed execution produced output")
	}
	if len(res.Errors) != 1 || res.Errors[0].AgentName != "bad" || res.Errors[0].Message != "boom" || res.Errors[0].TurnNumber != 2 {
		t.Fatalf("errors %+v", res.Errors)
	}
	rec := res.ConversationHistory[1]
	if rec.AgentName != "bad" || rec.Error == nil || rec.OutputData != nil {
		t.Fatalf("record %+v", rec)
	}
	if res.FinalState["after"] != "after#1" {
		t.Fatalf("after did not run on good's output: %v", res.FinalState)
	}
}

func TestWriterReviewerLoop(t *testing.T) {
	t.Parallel()
	e := build(
		agent("brief", 1),
		agent("writer", 5, "brief", "?reviewer|context.reviewer?.approved != true"),
		agent("reviewer", 5, "writer"),
		agent("publisher", 1, "reviewer|context.reviewer.approved == true"),
	)
	run := scripted{"reviewer": func(req *agentpkg.Request) (any, error) {
		return map[string]any{"approved": req.Execution == 3}, nil
	}}
	res := engine.New(e, "", engine.Options{Runner: run}).Run(context.Background())
	want := []string{"1:brief", "2:writer", "3:reviewer", "4:writer", "5:reviewer", "6:writer", "7:reviewer", "8:publisher"}
	if got := order(res); !reflect.DeepEqual(got, want) {
		t.Fatalf("order %v\nwant %v", got, want)
	}
	if res.CompletionReason != engine.Completed || len(res.Warnings) != 0 {
		t.Fatalf("reason %q warnings %v", res.CompletionReason, res.Warnings)
	}
}

func TestMaxTotalTurns(t *testing.T) {
	t.Parallel()
	e := build(agent("start", 1), agent("ping", 100, "start", "?pong"), agent("pong", 100, "ping"))
	e.Limits.MaxTotalTurns = 7
	res := engine.New(e, "", engine.Options{Runner: scripted{}}).Run(context.Background())
	if res.CompletionReason != engine.MaxTotalTurns || res.ExitCode() != engine.ExitMaxTurns || res.TurnCount != 7 {
		t.Fatalf("reason %q turns %d exit %d", res.CompletionReason, res.TurnCount, res.ExitCode())
	}
	// The command-line override wins over the file.
	res = engine.New(e, "", engine.Options{Runner: scripted{}, MaxTurns: 3}).Run(context.Background())
	if res.TurnCount != 3 || res.CompletionReason != engine.MaxTotalTurns {
		t.Fatalf("override: reason %q turns %d", res.CompletionReason, res.TurnCount)
	}
}

// blocking runs fast agents at once and blocks "slow" until ctx ends.
func blocking(started chan<- struct{}) agentpkg.Runner {
	return agentpkg.RunnerFunc(func(ctx context.Context, req *agentpkg.Request) *agentpkg.Result {
		if req.Agent.Name != "slow" {
			return &agentpkg.Result{Output: "ok", Usage: &state.Usage{Requests: 1, InputTokens: 10}}
		}
		if started != nil {
			close(started)
		}
		<-ctx.Done()
		return &agentpkg.Result{Err: ctx.Err(), Usage: &state.Usage{Requests: 1, InputTokens: 5}}
	})
}

func TestRunTimeoutDoesNotCommitTheInterruptedTurn(t *testing.T) {
	t.Parallel()
	e := build(agent("fast", 1), agent("slow", 1, "fast"), agent("sibling", 1, "fast"))
	res := engine.New(e, "", engine.Options{Runner: blocking(nil), Timeout: 50 * time.Millisecond}).Run(context.Background())
	if res.CompletionReason != engine.Timeout || res.ExitCode() != engine.ExitTimeout {
		t.Fatalf("reason %q exit %d", res.CompletionReason, res.ExitCode())
	}
	if res.TurnCount != 1 || len(res.ConversationHistory) != 1 || res.AgentExecutionCount["sibling"] != 0 {
		t.Fatalf("the interrupted turn was committed: %+v", res)
	}
	if len(res.Errors) != 2 || res.Errors[0].Message != "stopped before it finished: the run reached its timeout" ||
		res.Errors[1].Message != "finished, but the run reached its timeout before its turn ended, so its output was discarded" {
		t.Fatalf("interrupted executions not reported: %+v", res.Errors)
	}
	// What the interrupted turn spent was spent: the run's usage counts it.
	if want := (state.Usage{Requests: 3, InputTokens: 25}); res.Usage != want {
		t.Fatalf("usage %+v, want %+v", res.Usage, want)
	}
}

func TestCancelEndsTheRunAsCancelled(t *testing.T) {
	t.Parallel()
	e := build(agent("fast", 1), agent("slow", 1, "fast"))
	ctx, cancel := context.WithCancel(context.Background())
	started := make(chan struct{})
	go func() { <-started; cancel() }()
	res := engine.New(e, "", engine.Options{Runner: blocking(started)}).Run(ctx)
	if res.CompletionReason != engine.Cancelled || res.ExitCode() != engine.ExitCancelled || res.TurnCount != 1 {
		t.Fatalf("reason %q exit %d turns %d", res.CompletionReason, res.ExitCode(), res.TurnCount)
	}
}

func TestAgentTimeoutFailsOnlyThatAgent(t *testing.T) {
	t.Parallel()
	slow := agent("slow", 1)
	slow.Timeout = 20 * time.Millisecond
	e := build(slow, agent("other", 1))
	res := engine.New(e, "", engine.Options{Runner: blocking(nil)}).Run(context.Background())
	if res.CompletionReason != engine.Completed || res.ExitCode() != engine.ExitFailed {
		t.Fatalf("reason %q exit %d", res.CompletionReason, res.ExitCode())
	}
	if len(res.Errors) != 1 || !strings.Contains(res.Errors[0].Message, "agent timeout of 20ms") {
		t.Fatalf("errors %+v", res.Errors)
	}
	if res.FinalState["other"] != "ok" {
		t.Fatalf("other lost: %v", res.FinalState)
	}
}

func TestParallelLimitAndTurnSnapshot(t *testing.T) {
	t.Parallel()
	var agents []*ensemble.Agent
	agents = append(agents, agent("root", 1))
	for i := range 8 {
		agents = append(agents, agent(fmt.Sprintf("w%d", i), 1, "root"))
	}
	e := build(agents...)
	e.Limits.ParallelAgentLimit = 3
	var running, peak atomic.Int32
	var mu sync.Mutex
	var sawSibling bool
	run := agentpkg.RunnerFunc(func(ctx context.Context, req *agentpkg.Request) *agentpkg.Result {
		n := running.Add(1)
		defer running.Add(-1)
		for {
			p := peak.Load()
			if n <= p || peak.CompareAndSwap(p, n) {
				break
			}
		}
		time.Sleep(5 * time.Millisecond)
		mu.Lock()
		for k := range req.Context {
			if strings.HasPrefix(k, "w") {
				sawSibling = true
			}
		}
		mu.Unlock()
		return &agentpkg.Result{Output: req.Agent.Name}
	})
	res := engine.New(e, "", engine.Options{Runner: run}).Run(context.Background())
	if p := peak.Load(); p != 3 {
		t.Fatalf("peak concurrency %d, want 3", p)
	}
	if sawSibling {
		t.Fatal("an agent saw the output of another agent of the same turn")
	}
	for i, rec := range res.ConversationHistory[1:] {
		if rec.AgentName != fmt.Sprintf("w%d", i) || rec.TurnNumber != 2 {
			t.Fatalf("history not in file order: %v", order(res))
		}
	}
}

// TestCommitOrderIsFileOrder: agents of one turn that finish in reverse file
// order are still recorded, and their events reported, in file order.
func TestCommitOrderIsFileOrder(t *testing.T) {
	t.Parallel()
	const n = 6
	agents := []*ensemble.Agent{agent("root", 1)}
	done := make([]chan struct{}, n+1)
	for i := range n {
		agents = append(agents, agent(fmt.Sprintf("w%d", i), 1, "root"))
		done[i] = make(chan struct{})
	}
	done[n] = make(chan struct{})
	close(done[n])
	e := build(agents...)
	e.Limits.ParallelAgentLimit = n
	var mu sync.Mutex
	var finished, reported []string
	run := agentpkg.RunnerFunc(func(ctx context.Context, req *agentpkg.Request) *agentpkg.Result {
		var i int
		if _, err := fmt.Sscanf(req.Agent.Name, "w%d", &i); err != nil {
			return &agentpkg.Result{Output: "root"}
		}
		<-done[i+1] // w(i+1) has finished
		mu.Lock()
		finished = append(finished, req.Agent.Name)
		mu.Unlock()
		defer close(done[i])
		return &agentpkg.Result{Output: req.Agent.Name}
	})
	sink := func(ev events.Event) {
		if ev.Type == events.AgentCompleted && ev.Turn == 2 {
			mu.Lock()
			reported = append(reported, ev.Agent)
			mu.Unlock()
		}
	}
	res := engine.New(e, "", engine.Options{Runner: run, Events: sink}).Run(context.Background())
	var want, wantFinished []string
	for i := range n {
		want = append(want, fmt.Sprintf("2:w%d", i))
		wantFinished = append(wantFinished, fmt.Sprintf("w%d", n-1-i))
	}
	if !reflect.DeepEqual(finished, wantFinished) {
		t.Fatalf("the agents finished in order %v, the test wants %v", finished, wantFinished)
	}
	if got := order(res)[1:]; !reflect.DeepEqual(got, want) {
		t.Errorf("history %v, want file order %v", got, want)
	}
	if got := strings.Join(reported, ","); got != "w0,w1,w2,w3,w4,w5" {
		t.Errorf("agent_completed events in order %s", got)
	}
}

func TestRunnerPanicFailsTheExecutionOnly(t *testing.T) {
	t.Parallel()
	e := build(agent("a", 1), agent("b", 1))
	run := agentpkg.RunnerFunc(func(ctx context.Context, req *agentpkg.Request) *agentpkg.Result {
		if req.Agent.Name == "a" {
			panic("kaboom")
		}
		return &agentpkg.Result{Output: 1.0}
	})
	res := engine.New(e, "", engine.Options{Runner: run}).Run(context.Background())
	if len(res.Errors) != 1 || !strings.Contains(res.Errors[0].Message, "kaboom") || res.FinalState["b"] != 1.0 {
		t.Fatalf("%+v", res)
	}
}

func TestAgentRequests(t *testing.T) {
	t.Parallel()
	coord := agent("coord", 1)
	coord.Conversation.TriggersConversation = true
	e := build(coord, agent("helper", 1, "?nobody"), agent("nobody", 1, "helper"))
	// helper can only run through a request here: nobody never produces.
	run := scripted{
		"coord": func(*agentpkg.Request) (any, error) {
			return map[string]any{"agent_requests": []any{
				map[string]any{"target_agent_name": "helper", "parameters": map[string]any{"topic": "rates"}},
				map[string]any{"target_agent_name": "ghost"},
			}}, nil
		},
		"helper": func(req *agentpkg.Request) (any, error) { return req.RequestParameters, nil },
	}
	res := engine.New(e, "", engine.Options{Runner: run}).Run(context.Background())
	if got := res.FinalState["helper"]; !reflect.DeepEqual(got, map[string]any{"topic": "rates"}) {
		t.Fatalf("helper got %v", got)
	}
	if res.AgentExecutionCount["helper"] != 1 || res.ConversationHistory[1].TurnNumber != 2 {
		t.Fatalf("helper ran %v", order(res))
	}
	if len(res.Errors) != 1 || res.Errors[0].AgentName != "coord" || !strings.Contains(res.Errors[0].Message, `"ghost"`) {
		t.Fatalf("errors %+v", res.Errors)
	}
}

// TestMalformedAgentRequests: a request the engine cannot honour is an error
// of the requesting execution that says what is wrong with it, never dropped
// (or half-honoured) in silence; the well-formed requests beside it run.
func TestMalformedAgentRequests(t *testing.T) {
	t.Parallel()
	helper := map[string]any{"target_agent_name": "helper"}
	tests := []struct {
		name       string
		requests   any
		wantErr    string // "" = no error
		helperRuns bool
	}{
		{"well formed", []any{helper}, "", true},
		{"not a list", "helper", "agent_requests must be a list of {target_agent_name, parameters}", false},
		{"item not an object", []any{"helper", helper}, `agent_requests[1] must be an object {target_agent_name, parameters}`, true},
		{"no target", []any{map[string]any{"parameters": map[string]any{}}}, `agent_requests[1] has no target_agent_name`, false},
		{"unknown target", []any{helper, map[string]any{"target_agent_name": "ghost"}}, `agent_requests names unknown agents: "ghost"`, true},
		{"parameters not an object", []any{map[string]any{"target_agent_name": "helper", "parameters": "rates"}},
			`agent_requests[1] (for "helper"): parameters must be an object, got string`, false},
		{"several problems", []any{"x", map[string]any{"target_agent_name": "ghost"}},
			`agent_requests[1] must be an object {target_agent_name, parameters}; agent_requests names unknown agents: "ghost"`, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			coord := agent("coord", 1)
			coord.Conversation.TriggersConversation = true
			e := build(coord, agent("helper", 1, "?nobody"), agent("nobody", 1, "helper"))
			run := scripted{"coord": func(*agentpkg.Request) (any, error) {
				return map[string]any{"agent_requests": tt.requests}, nil
			}}
			res := engine.New(e, "", engine.Options{Runner: run}).Run(context.Background())
			var msgs []string
			for _, er := range res.Errors {
				msgs = append(msgs, er.AgentName+": "+er.Message)
			}
			if want := "coord: " + tt.wantErr; tt.wantErr != "" && (len(msgs) != 1 || msgs[0] != want) {
				t.Errorf("errors %q, want [%q]", msgs, want)
			}
			if tt.wantErr == "" && len(msgs) != 0 {
				t.Errorf("errors %q", msgs)
			}
			if ran := res.AgentExecutionCount["helper"] == 1; ran != tt.helperRuns {
				t.Errorf("helper ran: %v, want %v", ran, tt.helperRuns)
			}
			// The requester's output is stored all the same.
			if _, ok := res.FinalState["coord"]; !ok {
				t.Error("coord's output was not stored")
			}
		})
	}
}

func TestRequestsIgnoredWithoutTriggersConversation(t *testing.T) {
	t.Parallel()
	e := build(agent("coord", 1), agent("helper", 1, "?nobody"), agent("nobody", 1, "helper"))
	run := scripted{"coord": func(*agentpkg.Request) (any, error) {
		return map[string]any{"agent_requests": []any{map[string]any{"target_agent_name": "helper"}}}, nil
	}}
	res := engine.New(e, "", engine.Options{Runner: run}).Run(context.Background())
	if res.AgentExecutionCount["helper"] != 0 || len(res.Errors) != 0 {
		t.Fatalf("%v %v", order(res), res.Errors)
	}
}

func TestConditionRuntimeErrorIsAWarning(t *testing.T) {
	t.Parallel()
	// a's output is a string, so context.a.score fails at run time.
	e := build(agent("a", 1), agent("b", 1, "a|context.a.score > 1"))
	var mu sync.Mutex
	var warned []events.Event
	sink := func(ev events.Event) {
		if ev.Type == events.Warning {
			mu.Lock()
			warned = append(warned, ev)
			mu.Unlock()
		}
	}
	res := engine.New(e, "", engine.Options{Runner: scripted{}, Events: sink}).Run(context.Background())
	if res.AgentExecutionCount["b"] != 0 || res.ExitCode() != 0 {
		t.Fatalf("b ran or run failed: %v", order(res))
	}
	if len(res.Warnings) != 1 || res.Warnings[0].AgentName != "b" || res.Warnings[0].Dependency != "a" ||
		res.Warnings[0].Expression != "context.a.score > 1" {
		t.Fatalf("warnings %+v", res.Warnings)
	}
	// The event stream says the same: the agent, the edge and the expression.
	if len(warned) != 1 || warned[0].Agent != "b" || warned[0].Message != res.Warnings[0].Message {
		t.Fatalf("warning events %+v", warned)
	}
	for _, part := range []string{"b ← a", "context.a.score > 1", "counted as false"} {
		if !strings.Contains(warned[0].Message, part) {
			t.Errorf("warning %q does not name %q", warned[0].Message, part)
		}
	}
}

// TestRepeatedConditionFailureWarnsOnce: a condition that fails the same way
// in every turn it is evaluated is one warning, in the result and the stream.
func TestRepeatedConditionFailureWarnsOnce(t *testing.T) {
	t.Parallel()
	// ping produces a string three times; b's condition fails on each.
	e := build(agent("src", 1), agent("ping", 3, "src", "?pong"), agent("pong", 3, "ping"),
		agent("b", 1, "ping|context.ping.score > 1"))
	var warned atomic.Int64
	sink := func(ev events.Event) {
		if ev.Type == events.Warning {
			warned.Add(1)
		}
	}
	res := engine.New(e, "", engine.Options{Runner: scripted{}, Events: sink}).Run(context.Background())
	if res.AgentExecutionCount["ping"] != 3 || res.AgentExecutionCount["b"] != 0 {
		t.Fatalf("ran %v", order(res))
	}
	if len(res.Warnings) != 1 || warned.Load() != 1 {
		t.Fatalf("warnings %+v, %d warning events", res.Warnings, warned.Load())
	}
}

func TestStateKeyAndEvents(t *testing.T) {
	t.Parallel()
	a := agent("a", 1)
	a.Conversation.StateKey = "data"
	e := build(a, agent("b", 1, "a"))
	var mu sync.Mutex
	var types []events.Type
	sink := func(ev events.Event) { mu.Lock(); types = append(types, ev.Type); mu.Unlock() }
	var got any
	run := scripted{"b": func(req *agentpkg.Request) (any, error) { got = req.Dependencies["a"]; return nil, nil }}
	res := engine.New(e, "", engine.Options{Runner: run, Events: sink}).Run(context.Background())
	if res.FinalState["data"] != "a#1" || got != "a#1" {
		t.Fatalf("state %v, b got %v", res.FinalState, got)
	}
	want := []events.Type{events.RunStarted,
		events.TurnStarted, events.AgentStarted, events.AgentFinished, events.AgentCompleted, events.TurnCompleted,
		events.TurnStarted, events.AgentStarted, events.AgentFinished, events.AgentCompleted, events.TurnCompleted,
		events.RunCompleted}
	if !reflect.DeepEqual(types, want) {
		t.Fatalf("events %v", types)
	}
}

func TestStepByStep(t *testing.T) {
	t.Parallel()
	e := build(agent("a", 1), agent("b", 1, "a"))
	saved := 0
	r := engine.New(e, "", engine.Options{Runner: scripted{}, AfterTurn: func(st *stateT) error { saved = st.TurnCount; return nil }})
	if reason := r.Step(context.Background()); reason != "" || r.State().TurnCount != 1 || saved != 1 {
		t.Fatalf("step 1: %q %d", reason, r.State().TurnCount)
	}
	if reason := r.Step(context.Background()); reason != "" || r.State().TurnCount != 2 {
		t.Fatalf("step 2: %q", reason)
	}
	if reason := r.Step(context.Background()); reason != engine.Completed {
		t.Fatalf("step 3: %q", reason)
	}
	// A resumed run continues from the saved state and runs nothing again.
	res := engine.Resume(e, r.State(), engine.Options{Runner: scripted{}}).Run(context.Background())
	if res.TurnCount != 2 || len(res.ConversationHistory) != 2 || res.CompletionReason != engine.Completed {
		t.Fatalf("resume: %+v", res)
	}
}

// TestAgentTimeoutOfAScript: a real script killed by the agent's own
// timeout_seconds says so, and not that the run's limit was reached.
func TestAgentTimeoutOfAScript(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	script := dir + "/hang.sh"
	if err := os.WriteFile(script, []byte("#!/bin/sh\nsleep 30\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	a := agent("hang", 1)
	a.Spec, a.Timeout = &scriptkind.Spec{Path: script}, 100*time.Millisecond
	e := build(a)
	e.Dir = dir
	res := engine.New(e, "", engine.Options{Runner: &scriptkind.Runner{}}).Run(context.Background())
	if len(res.Errors) != 1 {
		t.Fatalf("errors %+v", res.Errors)
	}
	if msg := res.Errors[0].Message; msg != "timeout: agent timeout of 100ms" {
		t.Fatalf("message %q", msg)
	}
}

// TestScriptFaultsFailOnlyTheirExecution: real scripts that crash, hang,
// flood stdout or print broken JSON each fail their own execution with a
// clear message; the agents beside them go on and the state keeps what they
// produced.
func TestScriptFaultsFailOnlyTheirExecution(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	scripts := map[string]string{
		"crash.sh":     "echo 'disk full' >&2\nexit 3\n",
		"hang.sh":      "sleep 30\n",
		"flood.sh":     "exec yes flood\n",
		"badjson.sh":   "cat >/dev/null\necho '{\"rows\": [1,'\n",
		"good.sh":      "cat >/dev/null\necho '{\"ok\": true}'\n",
		"after.sh":     "cat\n",
		"unreached.sh": "echo unreachable\n",
	}
	for name, body := range scripts {
		if err := os.WriteFile(dir+"/"+name, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	yaml := `name: faults
agents:
  - {name: crash, script: crash.sh}
  - {name: hang, script: hang.sh, timeout_seconds: 0.5}
  - {name: flood, script: flood.sh}
  - {name: badjson, script: badjson.sh}
  - {name: good, script: good.sh}
  - {name: after, script: after.sh, dependencies: [good]}
  - {name: after_crash, script: unreached.sh, dependencies: [crash]}
`
	e, err := ensemble.LoadBytes(dir+"/ensemble.yaml", []byte(yaml), kinds.Builtin().Load(ensemble.LoadOptions{}))
	if err != nil {
		t.Fatal(err)
	}
	res := engine.New(e, "in", engine.Options{Runner: &scriptkind.Runner{}}).Run(context.Background())
	if res.CompletionReason != engine.Completed || res.ExitCode() != engine.ExitFailed || res.TurnCount != 2 {
		t.Fatalf("reason %q exit %d turns %d", res.CompletionReason, res.ExitCode(), res.TurnCount)
	}
	want := map[string]string{
		"crash":   "script exited with code 3: disk full",
		"hang":    "timeout",
		"flood":   "output exceeds 10 MiB",
		"badjson": `stdout starts with "{" but is not valid JSON`,
	}
	for _, er := range res.Errors {
		if er.TurnNumber != 1 || !strings.Contains(er.Message, want[er.AgentName]) || want[er.AgentName] == "" {
			t.Errorf("unexpected error %+v", er)
		}
		delete(want, er.AgentName)
	}
	if len(want) != 0 {
		t.Errorf("no error for %v: %+v", want, res.Errors)
	}
	if !reflect.DeepEqual(res.FinalState["good"], map[string]any{"ok": true}) {
		t.Errorf("good's output lost: %v", res.FinalState)
	}
	after, ok := res.FinalState["after"].(map[string]any)
	if !ok || !reflect.DeepEqual(after["dependencies"], map[string]any{"good": map[string]any{"ok": true}}) {
		t.Errorf("after was not given good's output: %v", res.FinalState["after"])
	}
	for _, name := range []string{"crash", "hang", "flood", "badjson", "after_crash"} {
		if _, has := res.FinalState[name]; has {
			t.Errorf("%s has an output in the final state", name)
		}
	}
	if res.AgentExecutionCount["after_crash"] != 0 || res.AgentExecutionCount["crash"] != 1 {
		t.Errorf("executions %v", res.AgentExecutionCount)
	}
}

// TestScriptStderrInHistory: a script's stderr tail is kept in its history
// record as "stderr", also when it succeeded; a record without any has no
// "stderr" key.
func TestScriptStderrInHistory(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	for name, body := range map[string]string{
		"noisy.sh": "cat >/dev/null\necho 'fetched 3 rows' >&2\necho '{\"rows\": 3}'\n",
		"quiet.sh": "cat >/dev/null\necho '{\"ok\": true}'\n",
	} {
		if err := os.WriteFile(dir+"/"+name, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	yaml := "name: s\nagents:\n  - {name: noisy, script: noisy.sh}\n  - {name: quiet, script: quiet.sh}\n"
	e, err := ensemble.LoadBytes(dir+"/ensemble.yaml", []byte(yaml), kinds.Builtin().Load(ensemble.LoadOptions{}))
	if err != nil {
		t.Fatal(err)
	}
	res := engine.New(e, "", engine.Options{Runner: &scriptkind.Runner{}}).Run(context.Background())
	if len(res.Errors) != 0 || len(res.ConversationHistory) != 2 {
		t.Fatalf("errors %+v, history %d", res.Errors, len(res.ConversationHistory))
	}
	want := map[string]string{"noisy": "fetched 3 rows", "quiet": ""}
	for _, rec := range res.ConversationHistory {
		b, err := json.Marshal(rec)
		if err != nil {
			t.Fatal(err)
		}
		var m map[string]any
		if err := json.Unmarshal(b, &m); err != nil {
			t.Fatal(err)
		}
		got, has := m["stderr"]
		if w := want[rec.AgentName]; w == "" && has || w != "" && got != w {
			t.Errorf("%s: record %s, want stderr %q", rec.AgentName, b, w)
		}
	}
}

// A condition that would take minutes is interrupted by the run's timeout or
// by cancellation: the run ends as timeout or cancelled, with no warning
// (the condition was not false, it had no result).
func TestExpensiveConditionIsInterrupted(t *testing.T) {
	t.Parallel()
	const expensive = `let s = repeat("a", 2000000); any(1..1000, any(1..900, s contains "b"))`
	for _, tc := range []struct {
		name   string
		reason string
	}{
		{"run timeout", engine.Timeout},
		{"cancelled", engine.Cancelled},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			e := build(agent("a", 1), agent("b", 1, "a|"+expensive))
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			opts := engine.Options{Runner: scripted{}}
			if tc.reason == engine.Timeout {
				opts.Timeout = 2 * time.Second
			} else {
				opts.Runner = scripted{"a": func(*agentpkg.Request) (any, error) {
					time.AfterFunc(time.Second, cancel) // while b's condition runs
					return "done", nil
				}}
			}
			done := make(chan *engine.Result, 1)
			go func() { done <- engine.New(e, "", opts).Run(ctx) }()
			select {
			case res := <-done:
				if res.CompletionReason != tc.reason || res.TurnCount != 1 || len(res.Warnings) != 0 {
					t.Fatalf("reason %q, turns %d, warnings %+v", res.CompletionReason, res.TurnCount, res.Warnings)
				}
			case <-time.After(30 * time.Second): // uninterrupted, the condition takes minutes
				t.Fatal("the condition was not interrupted")
			}
		})
	}
}
