package ensemble

import (
	"fmt"
	"testing"
)

func TestSuggest(t *testing.T) {
	t.Parallel()
	known := []string{"name", "agents", "dependencies", "env", "max_turns"}
	for in, want := range map[string]string{
		"agnets": "agents", "dependecies": "dependencies", "Name": "name", "max_turn": "max_turns",
		"xyz": "", "environment": "", "ev": "env",
	} {
		got := suggest(in, known)
		if (want == "" && got != "") || (want != "" && got != `; did you mean "`+want+`"?`) {
			t.Errorf("suggest(%q) = %q, want %q", in, got, want)
		}
	}
}

// A long cycle is found without deep recursion.
func TestComponentsLongCycle(t *testing.T) {
	t.Parallel()
	const n = 200000
	e := &Ensemble{}
	for i := range n {
		e.Agents = append(e.Agents, &Agent{Name: fmt.Sprint("a", i), Dependencies: []*Dependency{{AgentName: fmt.Sprint("a", (i+1)%n), RequiresAll: true}}})
	}
	e.Agents = append(e.Agents, &Agent{Name: "outside", Dependencies: []*Dependency{{AgentName: "a0"}}})
	e.Index()
	comp := components(e)
	for i, c := range comp[:n] {
		if c != comp[0] || c < 0 {
			t.Fatalf("agent %d in component %d, agent 0 in %d", i, c, comp[0])
		}
	}
	if comp[n] != -1 {
		t.Fatalf("the agent outside the cycle is in component %d", comp[n])
	}
}
