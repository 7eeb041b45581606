package llm

import (
	"testing"

	"github.com/ensemble-run/ensemble/agent"
	"github.com/ensemble-run/ensemble/ensemble"
)

// A fan-out instance's user message holds its item in place of the run's
// input, then the dependencies as usual.
func TestUserMessageOfAnInstance(t *testing.T) {
	t.Parallel()
	a := &ensemble.Agent{Name: "summarize", Kind: Kind{}, Dependencies: []*ensemble.Dependency{{AgentName: "splitter"}}}
	req := &agent.Request{Agent: a, Input: "the whole document", Dependencies: map[string]any{"splitter": map[string]any{"n": 2.0}},
		Instance: &agent.Instance{Name: "summarize[1]", Item: "second chunk", Index: 1, Count: 2}}
	want := "Item 2 of 2:\nsecond chunk\n\nOutput of splitter:\n{\"n\":2}"
	if got := userMessage(req, true); got != want {
		t.Errorf("got %q, want %q", got, want)
	}
	req.Instance.Item = map[string]any{"title": "A"}
	if got := userMessage(req, true); got != "Item 2 of 2:\n{\"title\":\"A\"}\n\nOutput of splitter:\n{\"n\":2}" {
		t.Errorf("got %q", got)
	}
}
