package state_test

import (
	"testing"

	"github.com/ensemble-run/ensemble/state"
)

func TestConsume(t *testing.T) {
	t.Parallel()
	s := state.Restore(state.Contents{
		OutputCount: map[string]int{"a": 3, "b": 1, "c": 2},
		Edges:       map[string]map[string]*state.EdgeState{"x": {"b": {Consumed: 1}}},
	})
	// x was resolved against a's second output and b's first; c's count
	// is missing: its current one is consumed.
	s.Consume("x", []string{"a", "b", "c"}, []int{2, 1}, []string{"a", "c"})
	for _, tt := range []struct {
		dep                 string
		consumed, triggered int
	}{{"a", 2, 1}, {"b", 1, 0}, {"c", 2, 1}} {
		if es := s.Edge("x", tt.dep); es == nil || es.Consumed != tt.consumed || es.Triggered != tt.triggered {
			t.Errorf("x←%s = %+v, want consumed %d triggered %d", tt.dep, es, tt.consumed, tt.triggered)
		}
	}
	// Consumption never goes back; a fresh edge triggers again.
	s.Consume("x", []string{"a"}, []int{1}, []string{"a"})
	if es := s.Edge("x", "a"); es.Consumed != 2 || es.Triggered != 2 {
		t.Errorf("x←a = %+v, want consumed 2 triggered 2", *es)
	}
	// No satisfied edge: nothing is written.
	s.Consume("y", nil, nil, nil)
	if m := s.Edges("y"); m != nil {
		t.Errorf("edges of y were created: %v", m)
	}
}

func TestTakeRequests(t *testing.T) {
	t.Parallel()
	s := state.New("")
	for _, q := range []state.AgentRequest{{From: "p", Target: "x"}, {From: "p", Target: "y"}, {From: "q", Target: "x"}, {From: "r", Target: "x"}} {
		s.Request(q)
	}
	s.TakeRequests("x", 2) // the first two for x made it ready; r's came later
	if p := s.Pending(); len(p) != 2 || p[0].Target != "y" || p[1].From != "r" {
		t.Fatalf("pending = %+v", p)
	}
	s.TakeRequests("y", 0)
	if len(s.Pending()) != 2 {
		t.Fatalf("pending = %+v", s.Pending())
	}
	s.TakeRequests("y", 1)
	s.TakeRequests("x", 1)
	if s.Pending() != nil {
		t.Fatalf("pending = %+v, want nil", s.Pending())
	}
}
