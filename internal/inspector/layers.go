package inspector

// The graph's layout in layers: agents that can run together share a
// column. An agent's layer is the length of the longest path of
// dependencies that leads to it from an agent without any (longest-path
// layering); the edges that close a cycle (a loop: the reviewer sends the
// writer back) are left out of the paths and drawn as back edges.

// layer sets the Layer of each of nodes and marks the Back edges of
// edges: a depth-first walk along the edges, from the agents without
// dependencies first, then from the others in the file's order, finds
// the edges that close a cycle; the rest form a DAG, whose longest paths
// give the layers.
func layer(nodes []*GraphNode, edges []GraphEdge) {
	index := make(map[string]int, len(nodes))
	for i, n := range nodes {
		index[n.Name] = i
	}
	// out[i] are the edges from node i, in the file's order; in[i] how
	// many lead to it.
	out := make([][]int, len(nodes))
	in := make([]int, len(nodes))
	for k, e := range edges {
		from, ok1 := index[e.From]
		to, ok2 := index[e.To]
		if ok1 && ok2 {
			out[from] = append(out[from], k)
			in[to]++
		}
	}
	markBack(nodes, edges, index, out, in)
	// The longest paths, in a topological order of the edges kept.
	left := make([]int, len(nodes))
	var ready []int
	for k := range edges {
		if _, ok := index[edges[k].From]; ok && !edges[k].Back {
			left[index[edges[k].To]]++
		}
	}
	for i := range nodes {
		nodes[i].Layer = 0
		if left[i] == 0 {
			ready = append(ready, i)
		}
	}
	for len(ready) > 0 {
		i := ready[0]
		ready = ready[1:]
		for _, k := range out[i] {
			if edges[k].Back {
				continue
			}
			to := index[edges[k].To]
			nodes[to].Layer = max(nodes[to].Layer, nodes[i].Layer+1)
			if left[to]--; left[to] == 0 {
				ready = append(ready, to)
			}
		}
	}
}

// markBack marks the edges that close a cycle, walking depth first (and
// without recursion: a chain of agents may be long) from the nodes no
// edge leads to, then from the others, each in the file's order.
func markBack(nodes []*GraphNode, edges []GraphEdge, index map[string]int, out [][]int, in []int) {
	const (
		unseen = iota
		onPath
		done
	)
	mark := make([]int, len(nodes))
	type frame struct{ node, next int }
	walk := func(start int) {
		stack := []frame{{start, 0}}
		mark[start] = onPath
		for len(stack) > 0 {
			f := &stack[len(stack)-1]
			if f.next == len(out[f.node]) {
				mark[f.node] = done
				stack = stack[:len(stack)-1]
				continue
			}
			k := out[f.node][f.next]
			f.next++
			to := index[edges[k].To]
			switch mark[to] {
			case onPath:
				edges[k].Back = true
			case unseen:
				mark[to] = onPath
				stack = append(stack, frame{to, 0})
			}
		}
	}
	for i := range nodes {
		if in[i] == 0 {
			walk(i)
		}
	}
	for i := range nodes {
		if mark[i] == unseen {
			walk(i)
		}
	}
}
