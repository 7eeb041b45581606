package agent

import (
	"reflect"
	"testing"

	"github.com/ensemble-run/ensemble/ensemble"
)

// TestDependencyOrder: the agent's declaration order (not alphabetical),
// then outputs of agents it does not declare, sorted; an agent's declared
// dependency without an output is left out.
func TestDependencyOrder(t *testing.T) {
	req := &Request{
		Agent:        &ensemble.Agent{Name: "a", Dependencies: []*ensemble.Dependency{{AgentName: "zeta"}, {AgentName: "missing"}, {AgentName: "alpha"}}},
		Dependencies: map[string]any{"alpha": 1, "zeta": 2, "y": 3, "b": 4},
	}
	if got, want := req.DependencyOrder(), []string{"zeta", "alpha", "b", "y"}; !reflect.DeepEqual(got, want) {
		t.Errorf("order %v, want %v", got, want)
	}
	req.Agent = nil
	if got, want := req.DependencyOrder(), []string{"alpha", "b", "y", "zeta"}; !reflect.DeepEqual(got, want) {
		t.Errorf("without an agent: order %v, want %v", got, want)
	}
}
