package engine_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
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
	"github.com/ensemble-run/ensemble/state"
)

// fan gives a a fan_out over src.
func fan(a *ensemble.Agent, src string) *ensemble.Agent {
	p, err := conditions.CompileList(src)
	if err != nil {
		panic(err)
	}
	a.FanOut = &ensemble.FanOut{Over: src, OverProgram: opaque.Make[ensemble.CompiledList](p), MaxItems: ensemble.DefaultMaxItems}
	return a
}

// splitEnsemble is split → summarize (fan-out over split's chunks) → reduce.
func splitEnsemble() *ensemble.Ensemble {
	return build(agent("split", 1), fan(agent("summarize", 1, "split"), "context.split.chunks"), agent("reduce", 1, "summarize"))
}

// chunks makes split output n chunks "c0", "c1"…; summarize answers
// "sum of cI".
func chunks(n int, summarize func(req *agentpkg.Request) (any, error)) scripted {
	return scripted{
		"split": func(*agentpkg.Request) (any, error) {
			list := make([]any, n)
			for i := range list {
				list[i] = fmt.Sprintf("c%d", i)
			}
			return map[string]any{"chunks": list}, nil
		},
		"summarize": summarize,
		"reduce":    func(req *agentpkg.Request) (any, error) { return req.Dependencies["summarize"], nil },
	}
}

func summary(req *agentpkg.Request) (any, error) {
	in := req.Instance
	if in == nil {
		return nil, errors.New("summarize ran without an item")
	}
	return fmt.Sprintf("sum of %v (%d/%d)", in.Item, in.Index, in.Count), nil
}

// Each item is one instance, run in the same turn; the agent's output is
// the instances' outputs in item order, even when they finish in reverse
// order; each instance has its own record and events; the fan-out is one
// execution of the agent.
func TestFanOutKeepsItemOrder(t *testing.T) {
	t.Parallel()
	const n = 4
	done := make([]chan struct{}, n+1)
	for i := range done {
		done[i] = make(chan struct{})
	}
	close(done[n])
	run := chunks(n, func(req *agentpkg.Request) (any, error) {
		i := req.Instance.Index
		<-done[i+1] // the last item finishes first
		defer close(done[i])
		return summary(req)
	})
	var mu sync.Mutex
	var evs []string
	sink := func(e events.Event) {
		if e.Type == events.AgentStarted || e.Type == events.AgentCompleted {
			mu.Lock()
			evs = append(evs, string(e.Type)+":"+e.Agent)
			mu.Unlock()
		}
	}
	res := engine.New(splitEnsemble(), "", engine.Options{Runner: run, Events: sink}).Run(context.Background())
	if res.CompletionReason != engine.Completed || len(res.Errors) != 0 {
		t.Fatalf("%s %+v", res.CompletionReason, res.Errors)
	}
	want := `["sum of c0 (0/4)","sum of c1 (1/4)","sum of c2 (2/4)","sum of c3 (3/4)"]`
	if got := mustJSON(t, res.FinalState["summarize"]); got != want {
		t.Errorf("output %s, want %s", got, want)
	}
	if got := mustJSON(t, res.FinalState["reduce"]); got != want {
		t.Errorf("reduce got %s", got)
	}
	if got := strings.Join(order(res), " "); got != "1:split 2:summarize[0] 2:summarize[1] 2:summarize[2] 2:summarize[3] 2:summarize 3:reduce" {
		t.Errorf("order %s", got)
	}
	for i, rec := range res.ConversationHistory[1:5] {
		if rec.Instance == nil || *rec.Instance != i || rec.Of != "summarize" || rec.Execution != 1 {
			t.Errorf("record %d: instance %v of %q execution %d", i, rec.Instance, rec.Of, rec.Execution)
		}
	}
	if res.AgentExecutionCount["summarize"] != 1 || len(res.AgentExecutionCount) != 3 {
		t.Errorf("counts %v", res.AgentExecutionCount)
	}
	joined := strings.Join(evs, " ")
	for i := range n {
		name := fmt.Sprintf("summarize[%d]", i)
		if !strings.Contains(joined, "agent_started:"+name) || !strings.Contains(joined, "agent_completed:"+name) {
			t.Errorf("no events of %s: %s", name, joined)
		}
	}
	if !strings.Contains(joined, "agent_completed:summarize ") {
		t.Errorf("no agent_completed of the agent: %s", joined)
	}
}

// A failed instance contributes null and its error, with the instance's
// name; the agent succeeds. With on_error: fail it fails the agent.
func TestFanOutFailedInstance(t *testing.T) {
	t.Parallel()
	run := chunks(3, func(req *agentpkg.Request) (any, error) {
		if req.Instance.Index == 1 {
			return nil, errors.New("chunk too hard")
		}
		return summary(req)
	})
	res := engine.New(splitEnsemble(), "", engine.Options{Runner: run}).Run(context.Background())
	if got := mustJSON(t, res.FinalState["summarize"]); got != `["sum of c0 (0/3)",null,"sum of c2 (2/3)"]` {
		t.Errorf("output %s", got)
	}
	if len(res.Errors) != 1 || res.Errors[0].AgentName != "summarize[1]" || res.Errors[0].Message != "chunk too hard" {
		t.Fatalf("errors %+v", res.Errors)
	}
	if res.AgentExecutionCount["reduce"] != 1 || res.ExitCode() != engine.ExitFailed {
		t.Errorf("reduce ran %d times, exit %d", res.AgentExecutionCount["reduce"], res.ExitCode())
	}

	e := splitEnsemble()
	e.Agents[1].FanOut.FailOnError = true
	res = engine.New(e, "", engine.Options{Runner: run}).Run(context.Background())
	if len(res.Errors) != 2 || res.Errors[0].AgentName != "summarize[1]" || res.Errors[1].AgentName != "summarize" ||
		!strings.Contains(res.Errors[1].Message, "1 of 3 instances failed (fan_out.on_error is fail): summarize[1]") {
		t.Fatalf("errors %+v", res.Errors)
	}
	if _, ok := res.FinalState["summarize"]; ok || res.AgentExecutionCount["reduce"] != 0 {
		t.Errorf("a failed fan-out has an output, or reduce ran: %v", res.FinalState)
	}
}

// Conditions see each instance's status in the fan-out's record
// (docs/semantics.md#conditions): a gather can tell a failed instance from
// one that printed null, and a fixer runs only for the failed ones.
func TestFanOutInstancesInHistory(t *testing.T) {
	t.Parallel()
	run := chunks(3, func(req *agentpkg.Request) (any, error) {
		switch req.Instance.Index {
		case 1:
			return nil, errors.New("chunk too hard")
		case 2:
			return nil, nil // succeeded with null
		}
		return summary(req)
	})
	run["fix"] = func(req *agentpkg.Request) (any, error) { return "fixed", nil }
	const failed = `map(filter(last(filter(history, .agent_name == 'summarize')).instances, .status == 'failed'), .instance)`
	fix := agent("fix", 1, "summarize|"+failed+" == [1]")
	fixNone := agent("fix_none", 1, "summarize|len("+failed+") == 0")
	check := agent("check", 1, "summarize|"+`let r = history[-1]; r.agent_name == 'summarize' && r.status == 'ok' &&
		map(r.instances, .status) == ['ok', 'failed', 'ok'] && r.instances[1].error == 'chunk too hard' &&
		r.instances[2].output_data == nil && r.instances[0].agent_name == 'summarize[0]' &&
		all(r.instances, .of == 'summarize' && .execution == 1 && .execution_time >= 0) &&
		history[2].status == 'failed' && history[0].instances == nil`)
	e := build(agent("split", 1), fan(agent("summarize", 1, "split"), "context.split.chunks"), fix, fixNone, check)
	res := engine.New(e, "", engine.Options{Runner: run}).Run(context.Background())
	if len(res.Warnings) != 0 {
		t.Fatalf("warnings %+v", res.Warnings)
	}
	if res.AgentExecutionCount["fix"] != 1 || res.AgentExecutionCount["fix_none"] != 0 || res.AgentExecutionCount["check"] != 1 {
		t.Errorf("executions %v, want fix and check only", res.AgentExecutionCount)
	}

	// The result's records are unchanged: status and instances are the
	// conditions' view of them.
	b, err := json.Marshal(res.ConversationHistory)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(b), `"instances"`) || strings.Contains(string(b), `"status"`) {
		t.Errorf("the result's records hold the conditions' fields: %s", b)
	}
}

// An empty list: the agent executes, with output [] and no instance.
func TestFanOutEmptyList(t *testing.T) {
	t.Parallel()
	var calls atomic.Int64
	run := chunks(0, func(req *agentpkg.Request) (any, error) { calls.Add(1); return summary(req) })
	res := engine.New(splitEnsemble(), "", engine.Options{Runner: run}).Run(context.Background())
	if got := strings.Join(order(res), " "); got != "1:split 2:summarize 3:reduce" || calls.Load() != 0 {
		t.Fatalf("order %s, %d instances", got, calls.Load())
	}
	if got := mustJSON(t, res.FinalState["summarize"]); got != `[]` || len(res.Errors) != 0 {
		t.Errorf("output %s, errors %+v", got, res.Errors)
	}
}

// A list beyond max_items, a value that is not a list, and an expression
// that fails each fail the agent's execution, naming the expression;
// nothing runs.
func TestFanOutBadList(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		split  any
		max    int
		over   string
		expect string
	}{
		{map[string]any{"chunks": []any{"a", "b", "c"}}, 2, "context.split.chunks", "fan_out.over (context.split.chunks) yielded 3 items, more than fan_out.max_items (2)"},
		{map[string]any{"chunks": "one long text"}, 0, "context.split.chunks", "fan_out.over (context.split.chunks) failed: must yield a list, but it returned a string"},
		{map[string]any{}, 0, "context.split.chunks", "fan_out.over (context.split.chunks) failed: must yield a list, but it returned null"},
		{"text", 0, "context.split.chunks", "fan_out.over (context.split.chunks) failed:"},
	} {
		e := build(agent("split", 1), fan(agent("summarize", 1, "split"), c.over))
		if c.max > 0 {
			e.Agents[1].FanOut.MaxItems = c.max
		}
		run := scripted{
			"split":     func(*agentpkg.Request) (any, error) { return c.split, nil },
			"summarize": func(*agentpkg.Request) (any, error) { t.Error("an instance ran"); return nil, nil },
		}
		res := engine.New(e, "", engine.Options{Runner: run}).Run(context.Background())
		if len(res.Errors) != 1 || res.Errors[0].AgentName != "summarize" || !strings.Contains(res.Errors[0].Message, c.expect) {
			t.Errorf("%v: errors %+v", c.split, res.Errors)
		}
		if res.AgentExecutionCount["summarize"] != 1 {
			t.Errorf("%v: counts %v", c.split, res.AgentExecutionCount)
		}
	}
}

// concurrency counts the runs in progress and keeps the highest count.
type concurrency struct {
	mu       sync.Mutex
	cur, top int
}

func (c *concurrency) enter() {
	c.mu.Lock()
	c.cur++
	c.top = max(c.top, c.cur)
	c.mu.Unlock()
}

func (c *concurrency) leave() {
	c.mu.Lock()
	c.cur--
	c.mu.Unlock()
}

// max_parallel caps the instances running at once, and the run's parallel
// limit still applies when it is lower.
func TestFanOutMaxParallel(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ maxParallel, parallel, want int }{{2, 5, 2}, {10, 3, 3}, {0, 2, 2}} {
		var cc concurrency
		e := splitEnsemble()
		e.Agents[1].FanOut.MaxParallel = c.maxParallel
		run := chunks(8, func(req *agentpkg.Request) (any, error) {
			cc.enter()
			defer cc.leave()
			return summary(req)
		})
		res := engine.New(e, "", engine.Options{Runner: run, Parallel: c.parallel}).Run(context.Background())
		if len(res.Errors) != 0 || len(res.FinalState["summarize"].([]any)) != 8 {
			t.Fatalf("%+v: errors %+v", c, res.Errors)
		}
		if cc.top > c.want || cc.top < 1 {
			t.Errorf("max_parallel %d, parallel %d: %d instances at once, want at most %d", c.maxParallel, c.parallel, cc.top, c.want)
		}
	}
}

// The fan-out counts as one execution of the agent for its max_turns and
// max_agent_executions, however many items it has; the execution number
// every instance sees is the agent's.
func TestFanOutIsOneExecution(t *testing.T) {
	t.Parallel()
	e := build(agent("seed", 1), agent("split", 2, "seed", "?summarize"), fan(agent("summarize", 2, "split"), "context.split.chunks"))
	e.Limits.MaxAgentExecutions = map[string]int{"summarize": 2}
	var mu sync.Mutex
	seen := map[int]int{}
	run := scripted{
		"split": func(req *agentpkg.Request) (any, error) {
			return map[string]any{"chunks": []any{"a", "b", "c"}, "round": req.Execution}, nil
		},
		"summarize": func(req *agentpkg.Request) (any, error) {
			mu.Lock()
			seen[req.Execution]++
			mu.Unlock()
			return summary(req)
		},
	}
	res := engine.New(e, "", engine.Options{Runner: run}).Run(context.Background())
	if res.AgentExecutionCount["summarize"] != 2 || seen[1] != 3 || seen[2] != 3 {
		t.Fatalf("counts %v, instances per execution %v", res.AgentExecutionCount, seen)
	}
}

// A fan-out inside a loop, joined with trigger: all: the join pairs each
// round's fan-out with the same round's critique, and a run interrupted in
// the middle of a fan-out turn, resumed, ends as the uninterrupted run.
func loopEnsemble() *ensemble.Ensemble {
	draft := agent("draft", 2, "seed", "?synth")
	split := agent("split", 2, "draft")
	review := fan(agent("review", 2, "split"), "context.split.parts")
	review.FanOut.MaxParallel = 2
	critic := agent("critic", 2, "draft")
	synth := agent("synth", 2, "review", "critic")
	synth.TriggerAll = true
	e := build(agent("seed", 1), draft, split, review, critic, synth)
	e.Path, e.Hash = "/nowhere/loop.yaml", fmt.Sprintf("%064x", 2)
	return e
}

func loopRunner(hook func(ctx context.Context, req *agentpkg.Request)) agentpkg.Runner {
	return agentpkg.RunnerFunc(func(ctx context.Context, req *agentpkg.Request) *agentpkg.Result {
		if hook != nil {
			hook(ctx, req)
			if ctx.Err() != nil {
				return &agentpkg.Result{Err: ctx.Err()}
			}
		}
		var out any
		switch req.Agent.Name {
		case "draft":
			out = fmt.Sprintf("draft %d", req.Execution)
		case "split":
			out = map[string]any{"parts": []any{req.Dependencies["draft"], "appendix", "notes"}}
		case "review":
			out = fmt.Sprintf("review of %v in round %d", req.Instance.Item, req.Execution)
		case "critic":
			out = fmt.Sprintf("critique of %v", req.Dependencies["draft"])
		case "synth":
			out = map[string]any{"reviews": req.Dependencies["review"], "critique": req.Dependencies["critic"]}
		}
		return &agentpkg.Result{Output: out, InputData: map[string]any{"dependencies": req.Dependencies, "instance": req.Instance != nil}}
	})
}

func TestFanOutInALoopWithAJoin(t *testing.T) {
	t.Parallel()
	res := engine.New(loopEnsemble(), "", engine.Options{Runner: loopRunner(nil)}).Run(context.Background())
	if res.CompletionReason != engine.Completed || len(res.Errors) != 0 {
		t.Fatalf("%s %+v", res.CompletionReason, res.Errors)
	}
	var rounds []string
	for _, rec := range res.ConversationHistory {
		if rec.AgentName == "synth" {
			rounds = append(rounds, mustJSON(t, rec.OutputData))
		}
	}
	want := []string{
		`{"critique":"critique of draft 1","reviews":["review of draft 1 in round 1","review of appendix in round 1","review of notes in round 1"]}`,
		`{"critique":"critique of draft 2","reviews":["review of draft 2 in round 2","review of appendix in round 2","review of notes in round 2"]}`,
	}
	if strings.Join(rounds, "\n") != strings.Join(want, "\n") {
		t.Fatalf("synth saw:\n%s\nwant\n%s", strings.Join(rounds, "\n"), strings.Join(want, "\n"))
	}
	if res.AgentExecutionCount["review"] != 2 {
		t.Errorf("counts %v", res.AgentExecutionCount)
	}
}

func TestFanOutResumedMidTurn(t *testing.T) {
	t.Parallel()
	want := comparable(t, engine.New(loopEnsemble(), "", engine.Options{Runner: loopRunner(nil)}).Run(context.Background()))

	// Interrupt the second round's fan-out once its second instance runs:
	// the first may have finished already.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	hook := func(c context.Context, req *agentpkg.Request) {
		if req.Instance != nil && req.Execution == 2 && req.Instance.Index == 1 {
			cancel()
			<-c.Done()
		}
	}
	path := filepath.Join(t.TempDir(), "run.state")
	var r *engine.Run
	r = engine.New(loopEnsemble(), "", engine.Options{Runner: loopRunner(hook), AfterTurn: func(*state.State) error {
		return state.Save(path, r.File(""))
	}})
	res := r.Run(ctx)
	if res.CompletionReason != engine.Cancelled || res.AgentExecutionCount["review"] != 1 {
		t.Fatalf("reason %q counts %v", res.CompletionReason, res.AgentExecutionCount)
	}
	interrupted := false
	for _, e := range res.Errors {
		interrupted = interrupted || e.AgentName == "review" && strings.HasPrefix(e.Message, "fan-out stopped before it finished")
	}
	if !interrupted {
		t.Errorf("the interrupted instances are not reported: %+v", res.Errors)
	}
	saved, err := state.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := engine.CheckState(loopEnsemble(), saved); err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(saved.State)
	if strings.Contains(string(b), "round 2") {
		t.Fatalf("the saved state holds part of the interrupted turn: %s", b)
	}
	res = engine.FromFile(loopEnsemble(), saved, engine.Options{Runner: loopRunner(nil)}).Run(context.Background())
	if got := comparable(t, res); got != want {
		t.Fatalf("resumed run differs:\n%s\nwant\n%s", got, want)
	}
}

// A saved state whose instance records name an agent without a fan_out is
// refused, naming the record.
func TestCheckStateInstanceOfNoFanOut(t *testing.T) {
	t.Parallel()
	r := engine.New(loopEnsemble(), "", engine.Options{Runner: loopRunner(nil)})
	r.Run(context.Background())
	f := r.File(engine.Completed)
	if err := engine.CheckState(loopEnsemble(), f); err != nil {
		t.Fatal(err)
	}
	e := loopEnsemble()
	e.Agents[3].FanOut = nil // review, with the same hash: as if the file had been edited
	if err := engine.CheckState(e, f); err == nil || !strings.Contains(err.Error(), `is an instance of "review", which has no fan_out`) {
		t.Fatalf("err = %v", err)
	}
}

// With on_error: fail, a failed instance fails its agent's execution; when
// that failure is handled (delivered through an on: failure edge to an agent
// that succeeded), the instance's own failure is handled with it, and the
// run exits 0.
func TestFanOutFailureHandledWithItsAgent(t *testing.T) {
	t.Parallel()
	run := chunks(3, func(req *agentpkg.Request) (any, error) {
		if req.Instance.Index == 1 {
			return nil, errors.New("chunk too hard")
		}
		return summary(req)
	})
	fallback := agent("fallback", 1, "summarize")
	fallback.Dependencies[0].OnFailure = true
	e := build(agent("split", 1), fan(agent("summarize", 1, "split"), "context.split.chunks"), fallback)
	e.Agents[1].FanOut.FailOnError = true
	res := engine.New(e, "", engine.Options{Runner: run}).Run(context.Background())
	if len(res.Errors) != 2 || res.AgentExecutionCount["fallback"] != 1 {
		t.Fatalf("errors %+v, counts %v", res.Errors, res.AgentExecutionCount)
	}
	for _, er := range res.Errors {
		if !er.Handled {
			t.Errorf("not handled: %+v", er)
		}
	}
	if res.ExitCode() != engine.ExitOK {
		t.Errorf("exit %d, want 0", res.ExitCode())
	}

	// With on_error: continue the agent succeeds: nothing handles the
	// instance's failure, and the run exits 1.
	e.Agents[1].FanOut.FailOnError = false
	res = engine.New(e, "", engine.Options{Runner: run}).Run(context.Background())
	if len(res.Errors) != 1 || res.Errors[0].Handled || res.ExitCode() != engine.ExitFailed {
		t.Errorf("errors %+v, exit %d", res.Errors, res.ExitCode())
	}
}

// Instances start in item order, whatever caps them: with max_parallel 1
// (or a run limited to one execution at a time) a fan-out is a loop over
// its items, in order.
func TestFanOutStartsInItemOrder(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ maxParallel, parallel int }{{1, 5}, {0, 1}, {2, 5}} {
		var mu sync.Mutex
		var started []int
		run := chunks(12, func(req *agentpkg.Request) (any, error) {
			mu.Lock()
			started = append(started, req.Instance.Index)
			mu.Unlock()
			return summary(req)
		})
		e := splitEnsemble()
		e.Agents[1].FanOut.MaxParallel = c.maxParallel
		res := engine.New(e, "", engine.Options{Runner: run, Parallel: c.parallel}).Run(context.Background())
		if len(res.Errors) != 0 {
			t.Fatalf("errors %+v", res.Errors)
		}
		if c.maxParallel != 1 && c.parallel != 1 {
			continue // two at once: either may reach its runner first
		}
		for i, n := range started {
			if n != i {
				t.Errorf("max_parallel %d, parallel %d: instances started in the order %v", c.maxParallel, c.parallel, started)
				break
			}
		}
	}
}

// With on_error: fail, the agent's error names the first failed instances
// and counts the others: a long list stays one readable line.
func TestFanOutFailErrorNamesAFew(t *testing.T) {
	t.Parallel()
	run := chunks(15, func(req *agentpkg.Request) (any, error) { return nil, errors.New("no") })
	e := splitEnsemble()
	e.Agents[1].FanOut.FailOnError = true
	res := engine.New(e, "", engine.Options{Runner: run}).Run(context.Background())
	last := res.Errors[len(res.Errors)-1]
	want := "15 of 15 instances failed (fan_out.on_error is fail): summarize[0], summarize[1], summarize[2], summarize[3], summarize[4] and 10 more"
	if last.AgentName != "summarize" || last.Message != want {
		t.Errorf("error %+v\nwant %q", last, want)
	}
}

// A fan-out over 200,000 items (max_items raised) under a run timeout of
// 10 s: the run ends with the timeout, having started only the instances
// max_parallel lets run, and reports the fan-out as one error. (At 1 s,
// and then at 3 s with two CI runs beside each other, a busy machine under
// the race detector spent the whole time committing the list, before the
// fan-out began; the instances wait for the deadline, so the test takes
// the whole 10 s, beside the package's other tests.)
func TestFanOutOfManyItemsKeepsTheDeadline(t *testing.T) {
	t.Parallel()
	const n = 200_000
	e := splitEnsemble()
	e.Agent("summarize").FanOut.MaxItems = n
	e.Agent("summarize").FanOut.MaxParallel = 2
	list := make([]any, n)
	for i := range list {
		list[i] = i
	}
	var started atomic.Int64
	run := agentpkg.RunnerFunc(func(ctx context.Context, req *agentpkg.Request) *agentpkg.Result {
		switch req.Agent.Name {
		case "split":
			return &agentpkg.Result{Output: map[string]any{"chunks": list}}
		case "summarize":
			started.Add(1)
			<-ctx.Done() // each instance runs until the run's deadline
			return &agentpkg.Result{Err: ctx.Err()}
		}
		return &agentpkg.Result{Output: "ok"}
	})
	res := engine.New(e, "", engine.Options{Runner: run, Timeout: 10 * time.Second}).Run(context.Background())
	if res.CompletionReason != engine.Timeout || res.ExitCode() != engine.ExitTimeout {
		t.Fatalf("reason %q exit %d, errors %+v", res.CompletionReason, res.ExitCode(), res.Errors)
	}
	if len(res.Errors) == 0 && started.Load() == 0 {
		// On a loaded machine under -race, reading and checking the
		// 200,000 items can outlast the deadline: the fan-out never began.
		t.Skip("the deadline came before the fan-out was planned: nothing to check")
	}
	if got := started.Load(); got > 2 {
		t.Errorf("%d of %d instances started, want at most max_parallel (2)", got, n)
	}
	// Whether the deadline came while the list was read, while it was
	// planned or while the first instances ran, the fan-out is one error.
	if len(res.Errors) != 1 || res.Errors[0].AgentName != "summarize" ||
		!strings.HasPrefix(res.Errors[0].Message, "stopped before it finished: the run reached its timeout") &&
			!strings.HasPrefix(res.Errors[0].Message, "fan-out stopped before it finished: the run reached its timeout; of its 200000 instances, 0 finished") {
		t.Fatalf("errors: %+v", res.Errors)
	}
}
