package engine_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"reflect"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	agentpkg "github.com/ensemble-run/ensemble/agent"
	"github.com/ensemble-run/ensemble/engine"
	"github.com/ensemble-run/ensemble/ensemble"
	"github.com/ensemble-run/ensemble/internal/conditions"
	"github.com/ensemble-run/ensemble/internal/opaque"
	scriptkind "github.com/ensemble-run/ensemble/kinds/script"
	"github.com/ensemble-run/ensemble/state"
)

// durableEnsemble exercises everything a state file must carry: a
// writer/reviewer loop behind a condition, agent requests (pending between
// turns), per-agent memory, a failing agent, a condition that fails at run
// time (a warning) and a final agent.
func durableEnsemble(t testing.TB) *ensemble.Ensemble {
	dep := func(name, cond string, required bool) *ensemble.Dependency {
		d := &ensemble.Dependency{AgentName: name, RequiresAll: required}
		if cond != "" {
			p, err := conditions.Compile(cond)
			if err != nil {
				t.Fatal(err)
			}
			d.Condition, d.Program = cond, opaque.Make[ensemble.CompiledCondition](p)
		}
		return d
	}
	ag := func(name string, maxTurns int, deps ...*ensemble.Dependency) *ensemble.Agent {
		return &ensemble.Agent{Name: name, Kind: scriptkind.Kind{}, Dependencies: deps,
			Conversation: ensemble.Conversation{MaxTurns: maxTurns}}
	}
	reviewer := ag("reviewer", 5, dep("writer", "", true))
	reviewer.Conversation.TriggersConversation = true
	e := &ensemble.Ensemble{Name: "durable", Path: "/nowhere/durable.yaml", Hash: fmt.Sprintf("%064x", 1),
		Agents: []*ensemble.Agent{
			ag("seed", 1),
			ag("writer", 5, dep("seed", "", true), dep("reviewer", "context.reviewer?.approved != true", false)),
			reviewer,
			ag("helper", 2, dep("seed", "context.seed.missing.field == 1", true)), // runs only when requested; warns
			ag("flaky", 2, dep("writer", "", true)),
			ag("publisher", 1, dep("reviewer", "context.reviewer.approved == true", true)),
		}}
	e.Index()
	return e
}

// durableRunner is a pure function of the request, with memory: what a
// fresh process would compute from the saved state.
func durableRunner(calls *atomic.Int64) agentpkg.Runner {
	return agentpkg.RunnerFunc(func(ctx context.Context, req *agentpkg.Request) *agentpkg.Result {
		if calls != nil {
			calls.Add(1)
		}
		var mem []string
		if req.Memory != nil {
			if err := json.Unmarshal(req.Memory, &mem); err != nil {
				return &agentpkg.Result{Err: fmt.Errorf("memory: %v", err)}
			}
		}
		mem = append(mem, fmt.Sprintf("turn %d saw %v", req.Turn, req.Fresh))
		memJSON, _ := json.Marshal(mem)
		res := &agentpkg.Result{InputData: map[string]any{"dependencies": req.Dependencies, "request": req.RequestParameters},
			Memory: memJSON, Usage: &state.Usage{Requests: 1, InputTokens: req.Turn, OutputTokens: req.Execution}}
		out := map[string]any{"by": req.Agent.Name, "execution": req.Execution, "remembers": len(mem)}
		switch req.Agent.Name {
		case "reviewer":
			out["approved"] = req.Execution >= 3
			if req.Execution == 2 {
				out["agent_requests"] = []any{map[string]any{"target_agent_name": "helper", "parameters": map[string]any{"why": "check"}}}
			}
		case "flaky":
			if req.Execution == 1 {
				res.Err = errors.New("flaky failed")
				return res
			}
		}
		res.Output = out
		return res
	})
}

// comparable is a result as JSON, without what depends on the clock.
func comparable(t testing.TB, res *engine.Result) string {
	t.Helper()
	b, err := json.Marshal(res)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	json.Unmarshal(b, &m)
	delete(m, "duration_seconds")
	for _, r := range m["conversation_history"].([]any) {
		rec := r.(map[string]any)
		delete(rec, "execution_time")
		delete(rec, "timestamp")
	}
	b, _ = json.MarshalIndent(m, "", " ")
	return string(b)
}

func uninterrupted(t *testing.T, e *ensemble.Ensemble) *engine.Result {
	res := engine.New(e, "go", engine.Options{Runner: durableRunner(nil)}).Run(context.Background())
	// The workflow must reach everything the state file has to carry.
	if res.CompletionReason != engine.Completed || res.AgentExecutionCount["helper"] != 1 ||
		res.AgentExecutionCount["publisher"] != 1 || len(res.Warnings) == 0 || len(res.Errors) != 1 || res.TurnCount < 5 {
		t.Fatalf("the reference run does not cover the cases: %s", comparable(t, res))
	}
	return res
}

// Driving a run turn by turn, saving after each turn and continuing from
// the loaded file in a fresh Run each time, reaches the result of an
// uninterrupted run.
func TestStepSaveLoadEqualsUninterruptedRun(t *testing.T) {
	t.Parallel()
	e := durableEnsemble(t)
	want := comparable(t, uninterrupted(t, e))

	path := filepath.Join(t.TempDir(), "run.state")
	r := engine.New(e, "go", engine.Options{Runner: durableRunner(nil)})
	sawPending, sawMemory := false, false
	reason := ""
	for turns := 0; reason == ""; turns++ {
		if turns > 50 {
			t.Fatal("no end")
		}
		reason = r.Step(context.Background())
		if err := state.Save(path, r.File(reason)); err != nil {
			t.Fatal(err)
		}
		f, err := state.Load(path)
		if err != nil {
			t.Fatal(err)
		}
		if f.CompletionReason != reason || f.Ensemble.SHA256 != e.Hash || f.Ensemble.Path != e.Path {
			t.Fatalf("file %+v", f)
		}
		sawPending = sawPending || len(f.State.Pending()) > 0
		sawMemory = sawMemory || len(f.State.Memory("writer")) > 0
		if err := engine.CheckEnsemble(e, f); err != nil {
			t.Fatal(err)
		}
		r = engine.FromFile(e, f, engine.Options{Runner: durableRunner(nil)})
	}
	if !sawPending || !sawMemory {
		t.Fatalf("pending requests (%v) or memory (%v) never crossed a save", sawPending, sawMemory)
	}
	if got := comparable(t, r.Result(reason)); got != want {
		t.Fatalf("resumed run differs:\n%s\nwant\n%s", got, want)
	}
	// Resuming a run that completed completes at once with the same result.
	f, _ := state.Load(path)
	var calls atomic.Int64
	again := engine.FromFile(e, f, engine.Options{Runner: durableRunner(&calls)}).Run(context.Background())
	if got := comparable(t, again); got != want || calls.Load() != 0 {
		t.Fatalf("resuming a completed run ran %d agents:\n%s", calls.Load(), got)
	}
}

// A turn cut short by a cancellation is not committed: its state is that of
// the turn before, and resuming runs it again, ending as the uninterrupted
// run did.
func TestInterruptedTurnRunsAgain(t *testing.T) {
	t.Parallel()
	e := durableEnsemble(t)
	want := comparable(t, uninterrupted(t, e))

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var saved *state.File
	path := filepath.Join(t.TempDir(), "run.state")
	var before []byte
	blocking := agentpkg.RunnerFunc(func(c context.Context, req *agentpkg.Request) *agentpkg.Result {
		if req.Turn == 3 {
			cancel()
			<-c.Done()
			return &agentpkg.Result{Err: c.Err()}
		}
		return durableRunner(nil).Run(c, req)
	})
	var r *engine.Run
	r = engine.New(e, "go", engine.Options{Runner: blocking, AfterTurn: func(*state.State) error {
		return state.Save(path, r.File(""))
	}})
	res := r.Run(ctx)
	if res.CompletionReason != engine.Cancelled || res.TurnCount != 2 || res.ExitCode() != engine.ExitCancelled {
		t.Fatalf("reason %q turn %d", res.CompletionReason, res.TurnCount)
	}
	before, _ = json.Marshal(r.State())
	saved, err := state.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	if after, _ := json.Marshal(saved.State); string(after) != string(before) || saved.State.TurnCount != 2 {
		t.Fatalf("the saved state is not that of turn 2:\n%s\n%s", after, before)
	}
	res = engine.FromFile(e, saved, engine.Options{Runner: durableRunner(nil)}).Run(context.Background())
	if got := comparable(t, res); got != want {
		t.Fatalf("resumed run differs:\n%s\nwant\n%s", got, want)
	}
}

func TestFromFileOverridesAndLimits(t *testing.T) {
	t.Parallel()
	e := durableEnsemble(t)
	var r *engine.Run
	path := filepath.Join(t.TempDir(), "s")
	r = engine.New(e, "go", engine.Options{Runner: durableRunner(nil), MaxTurns: 2, Parallel: 1, Timeout: time.Minute})
	res := r.Run(context.Background())
	if res.CompletionReason != engine.MaxTotalTurns {
		t.Fatalf("reason %q", res.CompletionReason)
	}
	if err := state.Save(path, r.File(res.CompletionReason)); err != nil {
		t.Fatal(err)
	}
	f, _ := state.Load(path)
	if f.Options != (state.Options{MaxTurns: 2, Parallel: 1, TimeoutSeconds: 60}) {
		t.Fatalf("options %+v", f.Options)
	}
	// The saved limit holds: max_total_turns again, nothing runs.
	var calls atomic.Int64
	r = engine.FromFile(e, f, engine.Options{Runner: durableRunner(&calls)})
	if res := r.Run(context.Background()); res.CompletionReason != engine.MaxTotalTurns || calls.Load() != 0 || res.TurnCount != 2 {
		t.Fatalf("reason %q, %d calls", res.CompletionReason, calls.Load())
	}
	if got := r.File("").Options; got.MaxTurns != 2 || got.Parallel != 1 {
		t.Fatalf("the resumed run does not keep the overrides: %+v", got)
	}
	// A raised limit lets it go on to the end.
	r = engine.FromFile(e, f, engine.Options{Runner: durableRunner(nil), MaxTurns: 20})
	if res := r.Run(context.Background()); res.CompletionReason != engine.Completed || r.File("").Options.MaxTurns != 20 {
		t.Fatalf("reason %q", res.CompletionReason)
	}
	// A different ensemble file is reported.
	other := *e
	other.Hash = fmt.Sprintf("%064x", 2)
	var ce *engine.ChangedError
	if err := engine.CheckEnsemble(&other, f); !errors.As(err, &ce) || ce.Path != e.Path {
		t.Fatalf("CheckEnsemble: %v", err)
	}
}

// A reader polling the state file while a long run saves after each of its
// turns only ever parses complete states, whose turns never go back.
func TestStateFileReaderDuringRun(t *testing.T) {
	t.Parallel()
	seed := &ensemble.Agent{Name: "seed", Kind: scriptkind.Kind{}, Conversation: ensemble.Conversation{MaxTurns: 1}}
	ping := &ensemble.Agent{Name: "ping", Kind: scriptkind.Kind{}, Conversation: ensemble.Conversation{MaxTurns: 40},
		Dependencies: []*ensemble.Dependency{{AgentName: "seed", RequiresAll: true}, {AgentName: "pong", RequiresAll: false}}}
	pong := &ensemble.Agent{Name: "pong", Kind: scriptkind.Kind{}, Conversation: ensemble.Conversation{MaxTurns: 40},
		Dependencies: []*ensemble.Dependency{{AgentName: "ping", RequiresAll: true}}}
	e := &ensemble.Ensemble{Name: "pingpong", Path: "/x.yaml", Hash: fmt.Sprintf("%064x", 3), Agents: []*ensemble.Agent{seed, ping, pong}}
	e.Index()
	path := filepath.Join(t.TempDir(), "s")
	var r *engine.Run
	r = engine.New(e, "", engine.Options{Runner: durableRunner(nil), MaxTurns: 100,
		AfterTurn: func(*state.State) error { return state.Save(path, r.File("")) }})
	if err := state.Save(path, r.File("")); err != nil {
		t.Fatal(err)
	}
	var done atomic.Bool
	var wg sync.WaitGroup
	var reads atomic.Int64
	wg.Add(1)
	go func() {
		defer wg.Done()
		last := 0
		for !done.Load() {
			f, err := state.Load(path)
			if err != nil {
				t.Errorf("after turn %d: %v", last, err)
				return
			}
			if n := f.State.TurnCount; n < last || len(f.State.History()) != n {
				t.Errorf("turn %d after %d, %d records", n, last, len(f.State.History()))
				return
			}
			last = f.State.TurnCount
			reads.Add(1)
		}
	}()
	res := r.Run(context.Background())
	done.Store(true)
	wg.Wait()
	if res.TurnCount != 81 || res.CompletionReason != engine.Completed {
		t.Fatalf("turns %d, %s", res.TurnCount, res.CompletionReason)
	}
	f, err := state.Load(path)
	if err != nil || f.State.TurnCount != 81 || !reflect.DeepEqual(f.State.ExecutionCounts(), map[string]int{"seed": 1, "ping": 40, "pong": 40}) {
		t.Fatalf("final file %v %v", err, f.State.ExecutionCounts())
	}
	t.Logf("%d complete reads", reads.Load())
}
