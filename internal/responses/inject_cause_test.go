package responses

import (
	"context"
	"testing"

	"github.com/ensemble-run/ensemble/agent"
	"github.com/ensemble-run/ensemble/ensemble"
)

// An injected response that fails the output_schema, with no response
// left for its repair turn, fails with the schema's error and the
// response's place (its number in the agent's list and FILE:LINE), not
// "injected responses exhausted".
func TestInjectedSchemaFailureIsNotExhaustion(t *testing.T) {
	t.Parallel()
	schema := approvalSchema(t)
	reviewer := &ensemble.Agent{Name: "reviewer", Kind: repairKind{}, Spec: 1, OutputSchema: schema}
	twice := &ensemble.Agent{Name: "twice", Kind: repairKind{}, Spec: 1, OutputSchema: schema}
	e := testEnsemble(t, reviewer, twice)
	r, err := ParseResponses("responses.yaml", []byte("reviewer:\n  - '{\"approved\": \"yes\"}'\n"+
		"twice:\n  - {approved: 1}\n  - {approved: 2}\n"))
	if err != nil {
		t.Fatal(err)
	}
	inj := Injected(r, nil)
	tests := []struct {
		agent, want string
		response    int
	}{
		{"reviewer", `agent "reviewer": injected response 1 (responses.yaml:2): the output does not match output_schema: at '/approved': got string, want boolean; a repair turn would take response 2, and the list has 1`, 1},
		// The repair's own failure is the one reported, with its line.
		{"twice", `agent "twice": injected response 2 (responses.yaml:5): the output does not match output_schema: at '/approved': got number, want boolean`, 2},
	}
	for _, tt := range tests {
		t.Run(tt.agent, func(t *testing.T) {
			t.Parallel()
			res := inj.Run(context.Background(), &agent.Request{Ensemble: e, Agent: e.Agent(tt.agent), Execution: 1})
			if res.Err == nil || res.Err.Error() != tt.want {
				t.Errorf("err = %v\nwant  %s", res.Err, tt.want)
			}
			if got := res.InputData.(map[string]any)["injected_response"]; got != tt.response {
				t.Errorf("injected_response %v, want %d", got, tt.response)
			}
		})
	}
}

// The line of each response is kept by both readers of the file and
// follows a merge into responses of the same file.
func TestResponsePositions(t *testing.T) {
	t.Parallel()
	for _, doc := range []string{
		"a:\n  - x\n  - {k: v}\nb: [1, 2]\n",    // the fast reader
		"a:\n  - x\n  - &k {k: v}\nb: [1, 2]\n", // YAML (an anchor)
	} {
		r, err := ParseResponses("r.yaml", []byte(doc))
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range []struct {
			agent string
			n     int
			want  string
		}{{"a", 1, "r.yaml:2"}, {"a", 2, "r.yaml:3"}, {"a", 3, ""}, {"b", 2, "r.yaml:4"}} {
			if got := r.Entry(c.agent).Position(c.n); got != c.want {
				t.Errorf("%q: %s response %d at %q, want %q", doc, c.agent, c.n, got, c.want)
			}
		}
		m := NewResponses()
		m.Add("a", "added in code")
		m.Merge(r)
		if got := m.Entry("a").Position(2); got != "r.yaml:2" {
			t.Errorf("merged: response 2 at %q, want r.yaml:2", got)
		}
		if got := m.Entry("a").Position(1); got != "" {
			t.Errorf("merged: response 1 (added in code) at %q, want none", got)
		}
	}
}
