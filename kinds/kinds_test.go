package kinds

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/ensemble-run/ensemble/agent"
	"github.com/ensemble-run/ensemble/ensemble"
	"github.com/ensemble-run/ensemble/graph"
	askkind "github.com/ensemble-run/ensemble/kinds/ask"
	llmkind "github.com/ensemble-run/ensemble/kinds/llm"
	scriptkind "github.com/ensemble-run/ensemble/kinds/script"
)

func ran(_ context.Context, req *agent.Request) *agent.Result {
	return &agent.Result{Output: "ran " + req.Agent.Name}
}

// TestDispatch: each agent goes to the runner of its kind; replaced runners
// win over the kind's own.
func TestDispatch(t *testing.T) {
	t.Parallel()
	agents := []*ensemble.Agent{
		{Name: "s", Kind: scriptkind.Kind{}},
		{Name: "l", Kind: llmkind.Kind{}},
		{Name: "a", Kind: askkind.Kind{}},
	}
	d := Builtin().Runner(&agent.Host{}, map[string]agent.Runner{
		"script": agent.RunnerFunc(ran), "llm": agent.RunnerFunc(ran), "ask": agent.RunnerFunc(ran),
	})
	for _, a := range agents {
		if res := d.Run(context.Background(), &agent.Request{Agent: a}); res.Output != "ran "+a.Name {
			t.Errorf("%s: %#v", a.Name, res)
		}
	}
	if d.Simulator() != nil {
		t.Error("replaced LLM runner: a simulator anyway")
	}
	res := d.Run(context.Background(), &agent.Request{Agent: &ensemble.Agent{Name: "x"}})
	if res.Err == nil || res.Err.Error() != `agent "x" has no kind` {
		t.Errorf("no kind: %v", res.Err)
	}
	res = d.Run(context.Background(), &agent.Request{Agent: &ensemble.Agent{Name: "y", Kind: otherKind{}}})
	if res.Err == nil || res.Err.Error() != `agent "y": unknown agent kind other` {
		t.Errorf("unknown kind: %v", res.Err)
	}
	d = Builtin().Runner(&agent.Host{}, map[string]agent.Runner{"script": nil})
	res = d.Run(context.Background(), &agent.Request{Agent: agents[0]})
	if res.Err == nil || res.Err.Error() != `agent "s": no runner is configured for script agents` {
		t.Errorf("no runner: %v", res.Err)
	}
	if d.Simulator() == nil {
		t.Error("the LLM kind's runner plays no simulated users")
	}
}

// TestRegisterTwice: two kinds with one name are a programming error.
func TestRegisterTwice(t *testing.T) {
	t.Parallel()
	defer func() {
		if r := recover(); r == nil || !strings.Contains(r.(string), `"script" registered twice`) {
			t.Errorf("recovered %v", r)
		}
	}()
	r := Builtin()
	r.Register(r.Kinds()[0])
}

// otherKind is a kind the registry does not know.
type otherKind struct{ scriptkind.Kind }

func (otherKind) String() string { return "other" }

// TestBuiltinKindsAnswer: what other packages ask of a kind through
// interfaces of their own, each built-in kind answers (a kind that lost a
// method would silently stop answering).
func TestBuiltinKindsAnswer(t *testing.T) {
	t.Parallel()
	type (
		guarded     interface{ Guarded() bool }
		jsonReplies interface{ JSONReply(*ensemble.Agent) bool }
		memory      interface{ KeepsMemory() bool }
		human       interface{ AsksHuman() bool }
		question    interface{ Question(*ensemble.Agent) string }
		tools       interface {
			Tools(*ensemble.Agent) []string
		}
		inputData interface {
			InputData(*agent.Request) map[string]any
		}
	)
	want := map[string][]bool{ // guarded, json, memory, human, question, tools, input data
		"script":   {false, false, false, false, false, false, true},
		"llm":      {true, true, true, false, false, true, false},
		"ask":      {false, false, true, true, true, false, false},
		"ensemble": {false, false, false, false, false, false, false},
		"dispatch": {false, false, false, false, false, false, false},
	}
	for _, k := range Builtin().Kinds() {
		_, g := k.(guarded)
		_, j := k.(jsonReplies)
		_, m := k.(memory)
		_, h := k.(human)
		_, q := k.(question)
		_, tl := k.(tools)
		_, in := k.(inputData)
		got := []bool{g, j, m, h, q, tl, in}
		if fmt.Sprint(got) != fmt.Sprint(want[k.String()]) {
			t.Errorf("%s answers %v, want %v", k, got, want[k.String()])
		}
		if _, ok := k.(graph.Shaper); !ok {
			t.Errorf("%s has no shape", k)
		}
		if _, ok := k.(graph.Describer); !ok {
			t.Errorf("%s describes no agent", k)
		}
	}
}

// hostKind records the host its runner is built from.
type hostKind struct {
	scriptkind.Kind
	got **agent.Host
}

func (hostKind) String() string { return "host" }
func (k hostKind) Runner(h *agent.Host) agent.Runner {
	*k.got = h
	return agent.RunnerFunc(ran)
}

// TestHostForNestedRuns: a kind's runner may run agents of any kind (a
// nested ensemble): its host has the registry's kinds and dispatch.
func TestHostForNestedRuns(t *testing.T) {
	t.Parallel()
	var got *agent.Host
	r := Builtin()
	r.Register(hostKind{got: &got})
	d := r.Runner(&agent.Host{Stream: true}, nil)
	if got == nil || !got.Stream || got.Dispatch != agent.Runner(d) || len(got.Kinds) != 6 || got.Kinds[5].String() != "host" {
		t.Fatalf("host %+v", got)
	}
	res := got.Dispatch.Run(context.Background(), &agent.Request{Agent: &ensemble.Agent{Name: "n", Kind: hostKind{}}})
	if res.Output != "ran n" {
		t.Errorf("dispatched: %#v", res)
	}
}
