package responses

import (
	"context"
	"strings"
	"testing"

	"github.com/ensemble-run/ensemble/agent"
	"github.com/ensemble-run/ensemble/ensemble"
)

func fanOutEnsemble(t *testing.T) *ensemble.Ensemble {
	sum := &ensemble.Agent{Name: "summarize", Kind: llmKind{}, FanOut: &ensemble.FanOut{Over: "x", MaxItems: 10}}
	return testEnsemble(t, sum, &ensemble.Agent{Name: "plain", Kind: llmKind{}})
}

// The agent's injected responses go to its instances in order, across
// executions (agent.Instance.Seq); an instance's own entry comes first, and takes
// the response of the agent's execution.
func TestInjectedInstances(t *testing.T) {
	t.Parallel()
	e := fanOutEnsemble(t)
	r, err := ParseResponses("r.yaml", []byte("summarize: [a, b, c, d]\n\"summarize[1]\": [one, two]\n"))
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Validate(e); err != nil {
		t.Fatal(err)
	}
	inj := Injected(r, nil)
	run := func(execution, index, seq int) *agent.Result {
		return inj.Run(context.Background(), &agent.Request{Ensemble: e, Agent: e.Agent("summarize"), Execution: execution,
			Instance: &agent.Instance{Name: ensemble.InstanceName("summarize", index), Item: "it", Index: index, Count: 3, Seq: seq}})
	}
	for _, c := range []struct {
		execution, index, seq int
		want                  any
		n                     int
	}{{1, 0, 1, "a", 1}, {1, 1, 2, "one", 1}, {1, 2, 3, "c", 3}, {2, 0, 4, "d", 4}, {2, 1, 5, "two", 2}} {
		res := run(c.execution, c.index, c.seq)
		in := res.InputData.(map[string]any)
		if res.Err != nil || res.Output != c.want || in["injected_response"] != c.n || in["item"] != "it" || in["index"] != c.index {
			t.Errorf("%+v: %v %v %#v", c, res.Output, res.Err, in)
		}
	}
	if res := run(2, 2, 6); res.Err == nil || !strings.Contains(res.Err.Error(), "exhausted after 4") {
		t.Errorf("sixth instance: %v", res.Err)
	}
}

// An instance name is a valid entry only for a fan-out agent.
func TestResponsesValidateInstanceNames(t *testing.T) {
	t.Parallel()
	e := fanOutEnsemble(t)
	r, err := ParseResponses("r.yaml", []byte("\"summarize[2]\": [x]\n\"plain[0]\": [y]\n\"summarize[x]\": [z]\n"))
	if err != nil {
		t.Fatal(err)
	}
	err = r.Validate(e)
	if err == nil || strings.Contains(err.Error(), `"summarize[2]"`) || !strings.Contains(err.Error(), `r.yaml:2:1: "plain[0]" in responses names an instance, but agent "plain" has no fan_out: its responses go under "plain"`) ||
		!strings.Contains(err.Error(), `r.yaml:3:1: unknown agent "summarize[x]"`) {
		t.Errorf("err = %v", err)
	}
}
