package engine_test

import (
	"context"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"

	agentpkg "github.com/ensemble-run/ensemble/agent"
	"github.com/ensemble-run/ensemble/engine"
	"github.com/ensemble-run/ensemble/ensemble"
	"github.com/ensemble-run/ensemble/events"
	"github.com/ensemble-run/ensemble/internal/conditions"
	"github.com/ensemble-run/ensemble/internal/opaque"
	"github.com/ensemble-run/ensemble/kinds/ask"
	scriptkind "github.com/ensemble-run/ensemble/kinds/script"
	"github.com/ensemble-run/ensemble/state"
)

// approvalEnsemble: writer, then approvers (ask agents) and a checker that
// run in the same turn, then a publisher that needs every approver.
func approvalEnsemble(approvers ...string) *ensemble.Ensemble {
	dep := func(name string) *ensemble.Dependency {
		return &ensemble.Dependency{AgentName: name, RequiresAll: true}
	}
	agents := []*ensemble.Agent{
		{Name: "writer", Kind: scriptkind.Kind{}},
	}
	var pubDeps []*ensemble.Dependency
	for _, a := range approvers {
		agents = append(agents, &ensemble.Agent{Name: a, Kind: ask.Kind{}, Spec: &ask.Spec{Question: "Approve " + a + "?"},
			Dependencies: []*ensemble.Dependency{dep("writer")}})
		pubDeps = append(pubDeps, dep(a))
	}
	agents = append(agents,
		&ensemble.Agent{Name: "checker", Kind: scriptkind.Kind{}, Dependencies: []*ensemble.Dependency{dep("writer")}},
		&ensemble.Agent{Name: "publisher", Kind: scriptkind.Kind{}, Dependencies: pubDeps})
	e := &ensemble.Ensemble{Name: "approval", Path: "/nowhere/approval.yaml", Hash: strings.Repeat("0", 64), Agents: agents}
	e.Index()
	return e
}

// suspendRunner runs ask agents with a real ask runner (no terminal, a
// durable run) and the others as functions of their inputs.
func suspendRunner() agentpkg.Runner {
	asker := &ask.Runner{Suspend: true}
	return agentpkg.RunnerFunc(func(ctx context.Context, req *agentpkg.Request) *agentpkg.Result {
		if _, ok := req.Agent.Kind.(ask.Kind); ok {
			return asker.Run(ctx, req)
		}
		if req.Agent.Name == "writer" {
			return &agentpkg.Result{Output: "a draft"}
		}
		return &agentpkg.Result{Output: map[string]any{"saw": len(req.Dependencies)}}
	})
}

// saveLoad round-trips the run through a JSON state file, as resume does.
func saveLoad(t *testing.T, r *engine.Run, reason string) *state.File {
	t.Helper()
	path := filepath.Join(t.TempDir(), "run.json")
	if err := state.Save(path, r.File(reason)); err != nil {
		t.Fatal(err)
	}
	f, err := state.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func TestSuspendOtherAgentsRunAndTheTurnCommits(t *testing.T) {
	t.Parallel()
	e := approvalEnsemble("approver")
	log := events.NewLog(nil)
	r := engine.New(e, "in", engine.Options{Runner: suspendRunner(), Events: log.Sink()})
	res := r.Run(context.Background())
	if res.CompletionReason != engine.AwaitingInput || res.ExitCode() != 5 {
		t.Fatalf("reason %q exit %d, errors %v", res.CompletionReason, res.ExitCode(), res.Errors)
	}
	// Turn 2 ran the checker and committed; the approver left no trace.
	if res.TurnCount != 2 || res.AgentExecutionCount["approver"] != 0 || res.AgentExecutionCount["checker"] != 1 || len(res.Errors) != 0 {
		t.Fatalf("turns %d, counts %v, errors %v", res.TurnCount, res.AgentExecutionCount, res.Errors)
	}
	want := []engine.PendingInput{{Agent: "approver", Question: "Approve approver?", Dependencies: map[string]any{"writer": "a draft"}, Turn: 3}}
	if !reflect.DeepEqual(res.PendingInput, want) {
		t.Fatalf("pending %#v, want %#v", res.PendingInput, want)
	}
	var requested []events.Event
	counts := map[events.Type]int{}
	for _, ev := range log.Events() {
		counts[ev.Type]++
		if ev.Type == events.InputRequested {
			requested = append(requested, ev)
		}
	}
	// The counts still match the result: the waiting agent has no outcome.
	if counts[events.AgentCompleted]+counts[events.AgentFailed] != len(res.ConversationHistory) ||
		counts[events.TurnCompleted] != res.TurnCount || counts[events.AgentStarted] != 3 {
		t.Errorf("event counts %v, records %d, turns %d", counts, len(res.ConversationHistory), res.TurnCount)
	}
	if len(requested) != 1 || requested[0].Agent != "approver" || requested[0].Question != "Approve approver?" || requested[0].Turn != 3 ||
		!reflect.DeepEqual(requested[0].Dependencies, map[string]any{"writer": "a draft"}) {
		t.Fatalf("input_requested events: %+v", requested)
	}

	// The saved run, loaded again, names the same question; answered with
	// JSON, it goes on and completes.
	f := saveLoad(t, r, res.CompletionReason)
	if got := engine.FromFile(e, f, engine.Options{}).Result(f.CompletionReason).PendingInput; !reflect.DeepEqual(got, want) {
		t.Fatalf("pending of the saved run %#v", got)
	}
	res = engine.FromFile(e, f, engine.Options{Runner: suspendRunner(), Answers: agentpkg.NewAnswers(map[string]string{"approver": `{"approved": true}`})}).Run(context.Background())
	if res.CompletionReason != engine.Completed || res.ExitCode() != 0 || res.PendingInput != nil {
		t.Fatalf("resumed: %q %v pending %v", res.CompletionReason, res.Errors, res.PendingInput)
	}
	rec := res.ConversationHistory[2]
	if rec.AgentName != "approver" || rec.TurnNumber != 3 || !reflect.DeepEqual(rec.OutputData, map[string]any{"approved": true}) {
		t.Fatalf("approver's record %+v", rec)
	}
	if last := res.ConversationHistory[len(res.ConversationHistory)-1]; last.AgentName != "publisher" || last.TurnNumber != 4 {
		t.Fatalf("last record %+v", last)
	}
}

func TestSuspendTwoAgentsAtOnce(t *testing.T) {
	t.Parallel()
	e := approvalEnsemble("legal", "editor")
	e.Agents = slicesDelete(e.Agents, "checker")
	e.Index()
	r := engine.New(e, "in", engine.Options{Runner: suspendRunner()})
	res := r.Run(context.Background())
	// Nothing else was ready in turn 2: it is not committed.
	if res.CompletionReason != engine.AwaitingInput || res.TurnCount != 1 || len(res.PendingInput) != 2 ||
		res.PendingInput[0].Agent != "legal" || res.PendingInput[1].Agent != "editor" || res.PendingInput[0].Turn != 2 {
		t.Fatalf("reason %q turns %d pending %+v", res.CompletionReason, res.TurnCount, res.PendingInput)
	}
	// One answer: the other still waits, and the run suspends again.
	f := saveLoad(t, r, res.CompletionReason)
	r = engine.FromFile(e, f, engine.Options{Runner: suspendRunner(), Answers: agentpkg.NewAnswers(map[string]string{"legal": "fine"})})
	res = r.Run(context.Background())
	if res.CompletionReason != engine.AwaitingInput || res.TurnCount != 2 || len(res.PendingInput) != 1 ||
		res.PendingInput[0].Agent != "editor" || res.PendingInput[0].Turn != 3 || res.FinalState["legal"] != "fine" {
		t.Fatalf("after one answer: %q turns %d pending %+v state %v", res.CompletionReason, res.TurnCount, res.PendingInput, res.FinalState)
	}
	f = saveLoad(t, r, res.CompletionReason)
	res = engine.FromFile(e, f, engine.Options{Runner: suspendRunner(), Answers: agentpkg.NewAnswers(map[string]string{"editor": "ok"})}).Run(context.Background())
	if res.CompletionReason != engine.Completed || res.AgentExecutionCount["publisher"] != 1 {
		t.Fatalf("after both: %q %v", res.CompletionReason, res.AgentExecutionCount)
	}
}

// A question that can no longer be answered (the turn's other agents made
// its edge unsatisfied) does not stop the run.
func TestSuspendedAgentNoLongerReadyGoesOn(t *testing.T) {
	t.Parallel()
	e := approvalEnsemble("approver")
	var mu sync.Mutex
	calls := 0
	runner := agentpkg.RunnerFunc(func(ctx context.Context, req *agentpkg.Request) *agentpkg.Result {
		mu.Lock()
		calls++
		mu.Unlock()
		if req.Agent.Name == "approver" {
			return &agentpkg.Result{Err: agentErr()}
		}
		return &agentpkg.Result{Output: "x"}
	})
	// The approver's edge holds only until the checker has run.
	e.Agent("approver").Dependencies[0].Condition = "executions.checker == 0"
	prog, err := conditions.Compile(e.Agent("approver").Dependencies[0].Condition)
	if err != nil {
		t.Fatal(err)
	}
	e.Agent("approver").Dependencies[0].Program = opaque.Make[ensemble.CompiledCondition](prog)
	res := engine.New(e, "in", engine.Options{Runner: runner}).Run(context.Background())
	if res.CompletionReason != engine.Completed || res.PendingInput != nil || res.AgentExecutionCount["approver"] != 0 {
		t.Fatalf("%q pending %v counts %v", res.CompletionReason, res.PendingInput, res.AgentExecutionCount)
	}
}

func agentErr() error {
	return &wrapped{agentpkg.ErrAwaitingInput}
}

type wrapped struct{ err error }

func (w *wrapped) Error() string { return "approver " + w.err.Error() }
func (w *wrapped) Unwrap() error { return w.err }

func slicesDelete(agents []*ensemble.Agent, name string) []*ensemble.Agent {
	var out []*ensemble.Agent
	for _, a := range agents {
		if a.Name != name {
			out = append(out, a)
		}
	}
	return out
}

func TestSuspendNeedsADurableRun(t *testing.T) {
	t.Parallel()
	e := approvalEnsemble("approver")
	asker := &ask.Runner{} // no terminal, not durable
	runner := agentpkg.RunnerFunc(func(ctx context.Context, req *agentpkg.Request) *agentpkg.Result {
		if req.Agent.Name == "approver" {
			return asker.Run(ctx, req)
		}
		return &agentpkg.Result{Output: "x"}
	})
	res := engine.New(e, "in", engine.Options{Runner: runner}).Run(context.Background())
	if res.CompletionReason != engine.Completed || len(res.Errors) != 1 || !strings.Contains(res.Errors[0].Message, "add --state FILE") {
		t.Fatalf("%q errors %v", res.CompletionReason, res.Errors)
	}
}
