package responses

import (
	"context"
	"errors"
	"reflect"
	"testing"

	"github.com/ensemble-run/ensemble/agent"
	"github.com/ensemble-run/ensemble/ensemble"
	"github.com/ensemble-run/ensemble/internal/runners"
)

// repairKind is an LLM-like kind whose replies must be JSON when the agent
// has an output_schema, with Spec repair turns.
type repairKind struct{ testKind }

func (repairKind) String() string { return "llm" }
func (repairKind) JSONReply(a *ensemble.Agent) bool {
	return a.OutputSchema != nil
}
func (repairKind) OutputRepairs(a *ensemble.Agent) int { n, _ := a.Spec.(int); return n }

func approvalSchema(t *testing.T) *ensemble.OutputSchema {
	t.Helper()
	s, err := ensemble.CompileOutputSchema(map[string]any{
		"type":       "object",
		"properties": map[string]any{"approved": map[string]any{"type": "boolean"}},
		"required":   []any{"approved"},
	})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// Injected responses are checked against the output_schema like a reply:
// a wrong one fails the execution with the validation errors, unless the
// agent has repair turns left, which take the next responses; the agent's
// later executions then take the responses after them
// (docs/testing.md#the-responses-file).
func TestInjectedOutputSchema(t *testing.T) {
	t.Parallel()
	schema := approvalSchema(t)
	repairing := &ensemble.Agent{Name: "reviewer", Kind: repairKind{}, Spec: 1, OutputSchema: schema}
	strict := &ensemble.Agent{Name: "strict", Kind: repairKind{}, Spec: 0, OutputSchema: schema}
	script := &ensemble.Agent{Name: "check", Kind: scriptKind{}, OutputSchema: schema}
	e := testEnsemble(t, repairing, strict, script)
	r := NewResponses()
	for _, v := range []any{
		`{"approved": "yes"}`, `{"approved": true}`, // execution 1: repaired
		"not json", "still not json", // execution 2: not repaired (1 repair only)
		map[string]any{"approved": false}, // execution 3
	} {
		r.Add("reviewer", v)
	}
	r.Add("strict", map[string]any{"approved": 1})
	r.Add("check", `{"approved": true}`)
	r.Add("check", map[string]any{})
	inj := Injected(r, nil)
	run := func(a string, execution int) *agent.Result {
		return inj.Run(context.Background(), &agent.Request{Ensemble: e, Agent: e.Agent(a), Execution: execution})
	}
	tests := []struct {
		agent     string
		execution int
		want      any
		wantErr   string
		response  int // injected_response
	}{
		{"reviewer", 1, map[string]any{"approved": true}, "", 2},
		{"reviewer", 2, nil, `agent "reviewer": injected response 4: output_schema needs JSON: the reply is not valid JSON: invalid character 's' looking for beginning of value; the reply was "still not json"`, 4},
		{"reviewer", 3, map[string]any{"approved": false}, "", 5},
		{"reviewer", 4, nil, `agent "reviewer": injected responses exhausted after 5 (execution 6 has none)`, 6},
		{"strict", 1, nil, `agent "strict": injected response 1: the output does not match output_schema: at '/approved': got number, want boolean`, 1},
		{"check", 1, map[string]any{"approved": true}, "", 1},
		{"check", 2, nil, `agent "check": injected response 2: the output does not match output_schema: at '/': missing property 'approved'`, 2},
	}
	for _, tt := range tests {
		res := run(tt.agent, tt.execution)
		switch {
		case tt.wantErr != "":
			if res.Err == nil || res.Err.Error() != tt.wantErr {
				t.Errorf("%s #%d: err = %v, want %q", tt.agent, tt.execution, res.Err, tt.wantErr)
			}
		case res.Err != nil:
			t.Errorf("%s #%d: %v", tt.agent, tt.execution, res.Err)
		case !reflect.DeepEqual(res.Output, tt.want):
			t.Errorf("%s #%d: output %#v, want %#v", tt.agent, tt.execution, res.Output, tt.want)
		}
		if got := res.InputData.(map[string]any)["injected_response"]; got != tt.response {
			t.Errorf("%s #%d: injected_response %v, want %d", tt.agent, tt.execution, got, tt.response)
		}
	}
	var se *runners.SchemaError
	if res := run("strict", 1); !errors.As(res.Err, &se) {
		t.Errorf("err is %T, want a *SchemaError", res.Err)
	}
}
