package consume

import (
	"testing"

	"github.com/ensemble-run/ensemble/state"
)

func TestEdges(t *testing.T) {
	t.Parallel()
	s := state.New("")
	s.OutputCount["a"], s.OutputCount["b"], s.OutputCount["c"] = 3, 1, 2
	s.EdgeForUpdate("x", "b").Consumed = 1
	// x was resolved against a's second output and b's first; c's count
	// is missing: its current one is consumed.
	Edges(s, "x", []string{"a", "b", "c"}, []int{2, 1}, []string{"a", "c"})
	for _, tt := range []struct {
		dep                 string
		consumed, triggered int
	}{{"a", 2, 1}, {"b", 1, 0}, {"c", 2, 1}} {
		if es := s.Edge("x", tt.dep); es == nil || es.Consumed != tt.consumed || es.Triggered != tt.triggered {
			t.Errorf("x←%s = %+v, want consumed %d triggered %d", tt.dep, es, tt.consumed, tt.triggered)
		}
	}
	// Consumption never goes back; a fresh edge triggers again.
	Edges(s, "x", []string{"a"}, []int{1}, []string{"a"})
	if es := s.Edge("x", "a"); es.Consumed != 2 || es.Triggered != 2 {
		t.Errorf("x←a = %+v, want consumed 2 triggered 2", *es)
	}
	// No satisfied edge: nothing is written.
	Edges(s, "y", nil, nil, nil)
	if _, ok := s.Edges["y"]; ok {
		t.Errorf("edges of y were created: %v", s.Edges["y"])
	}
}

func TestRequests(t *testing.T) {
	t.Parallel()
	s := state.New("")
	for _, q := range []state.AgentRequest{{From: "p", Target: "x"}, {From: "p", Target: "y"}, {From: "q", Target: "x"}, {From: "r", Target: "x"}} {
		s.Pending = append(s.Pending, q)
	}
	Requests(s, "x", 2) // the first two for x made it ready; r's came later
	if len(s.Pending) != 2 || s.Pending[0].Target != "y" || s.Pending[1].From != "r" {
		t.Fatalf("pending = %+v", s.Pending)
	}
	Requests(s, "y", 0)
	if len(s.Pending) != 2 {
		t.Fatalf("pending = %+v", s.Pending)
	}
	Requests(s, "y", 1)
	Requests(s, "x", 1)
	if s.Pending != nil {
		t.Fatalf("pending = %+v, want nil", s.Pending)
	}
}
