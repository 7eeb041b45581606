package kinds

import (
	"context"
	"strings"
	"testing"

	"github.com/ensemble-run/ensemble/agent"
	"github.com/ensemble-run/ensemble/ensemble"
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
