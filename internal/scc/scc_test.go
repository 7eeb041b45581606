package scc_test

import (
	"slices"
	"testing"

	"github.com/ensemble-run/ensemble/internal/scc"
)

func TestCyclic(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		succ [][]int
		self []bool
		want []int
	}{
		{"chain", [][]int{{1}, {2}, nil}, nil, []int{-1, -1, -1}},
		{"loop of two, and a node after it", [][]int{{1}, {0, 2}, nil}, nil, []int{0, 0, -1}},
		{"two cycles joined by an edge", [][]int{{1}, {0, 2}, {3}, {2}}, nil, []int{1, 1, 0, 0}},
		{"a node with an edge to itself", [][]int{{0, 1}, nil}, []bool{true, false}, []int{0, -1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			self := tc.self
			if self == nil {
				self = make([]bool, len(tc.succ))
			}
			if got := scc.Cyclic(tc.succ, self); !slices.Equal(got, tc.want) {
				t.Errorf("Cyclic = %v, want %v", got, tc.want)
			}
		})
	}
}

// A long cycle is found without deep recursion.
func TestCyclicLongCycle(t *testing.T) {
	t.Parallel()
	const n = 200000
	succ := make([][]int, n+1)
	for i := range n {
		succ[i] = []int{(i + 1) % n}
	}
	succ[n] = []int{0} // a node outside the cycle, with an edge into it
	comp := scc.Cyclic(succ, make([]bool, n+1))
	for i, c := range comp[:n] {
		if c != comp[0] || c < 0 {
			t.Fatalf("node %d in component %d, node 0 in %d", i, c, comp[0])
		}
	}
	if comp[n] != -1 {
		t.Fatalf("the node outside the cycle is in component %d", comp[n])
	}
}
