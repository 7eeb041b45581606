package ask

import (
	"strings"
	"testing"

	"github.com/ensemble-run/ensemble/agent"
	"github.com/ensemble-run/ensemble/ensemble"
)

// An ask agent with an input template shows its text after the question,
// in place of its dependencies' outputs and request parameters.
func TestFormatAskShowsTheInputTemplate(t *testing.T) {
	t.Parallel()
	a := &ensemble.Agent{Name: "approver", Kind: Kind{}, Spec: &Spec{Question: "Publish it?"},
		Dependencies: []*ensemble.Dependency{{AgentName: "writer"}}}
	req := &agent.Request{Agent: a, Turn: 2, Dependencies: map[string]any{"writer": map[string]any{"text": "long draft", "notes": "x"}},
		Templates: map[string]any{"input": "Title: Ode"}}
	got := FormatAsk(req)
	if !strings.Contains(got, "Publish it?\n\nTitle: Ode\n") || strings.Contains(got, "long draft") || strings.Contains(got, "writer") {
		t.Errorf("shown:\n%s", got)
	}
}
