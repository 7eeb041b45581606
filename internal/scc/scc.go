// Package scc finds the cycles of a directed graph: its strongly connected
// components. It has a package of its own, with no imports, so that its
// tests need none of the packages that load ensembles.
package scc

// Cyclic numbers the strongly connected components of the graph whose
// edges out of node i are succ[i] that hold a cycle: two nodes or more, or
// one with an edge to itself (self[i]). comp[i] is node i's component,
// numbered from 0, or -1 when i is in no cycle. Tarjan's algorithm,
// iterative, so that a long chain cannot grow the stack.
func Cyclic(succ [][]int, self []bool) []int {
	n := len(succ)
	index, low, comp := make([]int, n), make([]int, n), make([]int, n)
	onStack := make([]bool, n)
	for i := range index {
		index[i], comp[i] = -1, -1
	}
	var stack []int
	next, nComp := 0, 0
	type frame struct{ v, edge int }
	for root := range n {
		if index[root] >= 0 {
			continue
		}
		calls := []frame{{root, 0}}
		index[root], low[root] = next, next
		next++
		stack = append(stack, root)
		onStack[root] = true
		for len(calls) > 0 {
			f := &calls[len(calls)-1]
			if f.edge < len(succ[f.v]) {
				w := succ[f.v][f.edge]
				f.edge++
				switch {
				case index[w] < 0:
					index[w], low[w] = next, next
					next++
					stack = append(stack, w)
					onStack[w] = true
					calls = append(calls, frame{w, 0})
				case onStack[w]:
					low[f.v] = min(low[f.v], index[w])
				}
				continue
			}
			v := f.v
			calls = calls[:len(calls)-1]
			if len(calls) > 0 {
				p := calls[len(calls)-1].v
				low[p] = min(low[p], low[v])
			}
			if low[v] != index[v] {
				continue
			}
			start := len(stack) - 1
			for stack[start] != v {
				start--
			}
			members := stack[start:]
			stack = stack[:start]
			cyclic := len(members) > 1 || self[v]
			for _, m := range members {
				onStack[m] = false
				if cyclic {
					comp[m] = nComp
				}
			}
			if cyclic {
				nComp++
			}
		}
	}
	return comp
}
