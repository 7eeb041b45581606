package engine

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/ensemble-run/ensemble/agent"
	"github.com/ensemble-run/ensemble/ensemble"
	"github.com/ensemble-run/ensemble/internal/conditions"
	"github.com/ensemble-run/ensemble/internal/opaque"
	"github.com/ensemble-run/ensemble/internal/resolver"
	llmkind "github.com/ensemble-run/ensemble/kinds/llm"
	scriptkind "github.com/ensemble-run/ensemble/kinds/script"
	"github.com/ensemble-run/ensemble/state"
)

func fanEnsemble(t *testing.T, maxParallel int) *ensemble.Ensemble {
	t.Helper()
	p, err := conditions.CompileList("context.split.chunks")
	if err != nil {
		t.Fatal(err)
	}
	split := &ensemble.Agent{Name: "split", Kind: scriptkind.Kind{}, Conversation: ensemble.Conversation{MaxTurns: 1}}
	sum := &ensemble.Agent{Name: "sum", Kind: llmkind.Kind{}, Conversation: ensemble.Conversation{MaxTurns: 3},
		Dependencies: []*ensemble.Dependency{{AgentName: "split", RequiresAll: true}},
		FanOut:       &ensemble.FanOut{Over: "context.split.chunks", OverProgram: opaque.Make[ensemble.CompiledList](p), MaxItems: 10, MaxParallel: maxParallel}}
	other := &ensemble.Agent{Name: "other", Kind: scriptkind.Kind{}, Conversation: ensemble.Conversation{MaxTurns: 1}}
	e := &ensemble.Ensemble{Name: "t", Agents: []*ensemble.Agent{split, sum, other}}
	e.Index()
	return e
}

// The planner expands a ready fan-out agent into one execution per item,
// in item order, between the executions of the agents around it: each an
// instance with its item, a fresh conversation, the agent's execution
// number and its place among the agent's instances so far.
func TestPlanExpandsAFanOut(t *testing.T) {
	t.Parallel()
	e := fanEnsemble(t, 2)
	c := state.Contents{
		AccumulatedContext:  map[string]any{"split": map[string]any{"chunks": []any{"a", "b", "c"}}},
		OutputCount:         map[string]int{"split": 1},
		AgentExecutionCount: map[string]int{"split": 1, "sum": 1},
		Memory:              map[string]json.RawMessage{"sum": json.RawMessage(`{"version":1,"messages":[]}`)},
	}
	// Two instances of the first execution are in the history.
	for i := range 2 {
		c.History = append(c.History, &state.Record{TurnNumber: 1, AgentName: ensemble.InstanceName("sum", i), Instance: &i, Of: "sum", Execution: 1})
	}
	st := state.Restore(c)
	r := Resume(e, st, Options{Parallel: 5})
	ready := []resolver.Ready{{Agent: e.Agents[1], Satisfied: []string{"split"}, Outputs: []int{1}}, {Agent: e.Agents[2]}}
	p := r.plan(context.Background(), 3, ready)
	if len(p.execs) != 4 || p.fans[0] == nil || p.fans[0].count != 3 || p.fans[1] != nil {
		t.Fatalf("plan: %d executions, fans %+v", len(p.execs), p.fans)
	}
	for i, x := range p.execs[:3] {
		in := x.req.Instance
		if x.agent != 0 || in == nil || in.Index != i || in.Count != 3 || in.Item != []string{"a", "b", "c"}[i] ||
			in.Name != ensemble.InstanceName("sum", i) || in.Seq != 3+i || x.req.Execution != 2 || x.req.Memory != nil {
			t.Errorf("execution %d: %+v, instance %+v", i, x.req, in)
		}
		if x.gate == nil || cap(x.gate.slots) != 2 || x.gate != p.execs[0].gate {
			t.Errorf("execution %d: no shared limit of 2", i)
		}
	}
	if x := p.execs[3]; x.agent != 1 || x.req.Instance != nil || x.gate != nil {
		t.Errorf("the other agent: %+v", x)
	}
}

// The committer folds the instances into one execution of the agent: a
// record per instance, then the agent's record with the list of outputs
// (null for a failure); one count, one output, no memory.
func TestCommitFoldsAFanOut(t *testing.T) {
	t.Parallel()
	e := fanEnsemble(t, 0)
	chunks := map[string]any{"chunks": []any{"a", "b", "c"}}
	st := state.Restore(state.Contents{
		TurnCount:           1,
		AccumulatedContext:  map[string]any{"split": chunks},
		OutputCount:         map[string]int{"split": 1},
		AgentExecutionCount: map[string]int{"split": 1},
		History:             []*state.Record{{TurnNumber: 1, AgentName: "split", Execution: 1, OutputData: chunks}},
	})
	r := Resume(e, st, Options{Parallel: 5})
	p := r.plan(context.Background(), 2, []resolver.Ready{{Agent: e.Agents[1], Satisfied: []string{"split"}, Outputs: []int{1}}})
	if p.execs[0].gate.slots != nil {
		t.Error("a fan-out within the parallel limit has a limit of its own")
	}
	for i := range p.execs {
		x := &p.execs[i]
		x.started, x.took = time.Now(), time.Millisecond
		x.res = &agent.Result{Output: "out " + x.req.Instance.Name, Memory: json.RawMessage(`{"version":1}`)}
		if i == 1 {
			x.res = &agent.Result{Err: errors.New("boom")}
		}
	}
	r.committer.commit(2, &p)
	var names []string
	for _, rec := range st.History()[1:] {
		names = append(names, rec.AgentName)
	}
	if got, _ := json.Marshal(names); string(got) != `["sum[0]","sum[1]","sum[2]","sum"]` {
		t.Fatalf("records %s", got)
	}
	if got, _ := json.Marshal(st.Context()["sum"]); string(got) != `["out sum[0]",null,"out sum[2]"]` {
		t.Errorf("output %s", got)
	}
	if st.Executions("sum") != 1 || st.Outputs("sum") != 1 || len(st.ExecutionCounts()) != 2 || st.Memory("sum") != nil {
		t.Errorf("counts %v %v, memory %s", st.ExecutionCounts(), st.Contents().OutputCount, st.Memory("sum"))
	}
	if rec := st.History()[2]; rec.Error == nil || *rec.Error != "boom" || *rec.Instance != 1 || rec.Of != "sum" {
		t.Errorf("failed instance %+v", rec)
	}
	if r.committer.instancesOf("sum") != 3 {
		t.Errorf("instances %d", r.committer.instancesOf("sum"))
	}
}

// A run whose deadline has passed plans no more of a long fan-out: the
// planner looks at the context every checkEvery items.
func TestPlanStopsAtTheDeadline(t *testing.T) {
	t.Parallel()
	const n = 200_000
	e := fanEnsemble(t, 2)
	e.Agents[1].FanOut.MaxItems = n
	list := make([]any, n)
	for i := range list {
		list[i] = i
	}
	st := state.Restore(state.Contents{
		AccumulatedContext:  map[string]any{"split": map[string]any{"chunks": list}},
		OutputCount:         map[string]int{"split": 1},
		AgentExecutionCount: map[string]int{"split": 1},
	})
	r := Resume(e, st, Options{Parallel: 5})
	ready := []resolver.Ready{{Agent: e.Agents[1], Satisfied: []string{"split"}, Outputs: []int{1}}}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	p := r.plan(ctx, 2, ready)
	if len(p.execs) > checkEvery {
		t.Fatalf("%d executions planned after the deadline", len(p.execs))
	}
	// Every item is planned while the context lasts.
	p = r.plan(context.Background(), 2, ready)
	if len(p.execs) != n {
		t.Fatalf("%d executions planned, want %d", len(p.execs), n)
	}
}
