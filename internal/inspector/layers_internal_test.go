package inspector

import (
	"maps"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// The layers of a graph: each agent's column is its longest path of
// dependencies from an agent without any; edges that close a loop are
// back edges, left out of the paths.
func TestLayer(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name   string
		agents string   // in the file's order
		edges  []string // "from>to"
		want   map[string]int
		back   []string // the back edges
	}{
		{name: "none", agents: "a b c", want: map[string]int{"a": 0, "b": 0, "c": 0}},
		{name: "chain", agents: "a b c", edges: []string{"a>b", "b>c"}, want: map[string]int{"a": 0, "b": 1, "c": 2}},
		{name: "chain declared backwards", agents: "c b a", edges: []string{"a>b", "b>c"}, want: map[string]int{"a": 0, "b": 1, "c": 2}},
		{name: "parallel agents share a column", agents: "split x y z join", edges: []string{"split>x", "split>y", "split>z", "x>join", "y>join", "z>join"},
			want: map[string]int{"split": 0, "x": 1, "y": 1, "z": 1, "join": 2}},
		{name: "the longest path wins", agents: "a b c d", edges: []string{"a>b", "b>c", "a>d", "c>d"}, want: map[string]int{"a": 0, "b": 1, "c": 2, "d": 3}},
		{name: "two starts", agents: "a b c", edges: []string{"a>c", "b>c"}, want: map[string]int{"a": 0, "b": 0, "c": 1}},
		{name: "a loop", agents: "writer reviewer", edges: []string{"reviewer>writer", "writer>reviewer"},
			want: map[string]int{"writer": 0, "reviewer": 1}, back: []string{"reviewer>writer"}},
		{name: "a loop after a start", agents: "input writer reviewer publish", edges: []string{"input>writer", "reviewer>writer", "writer>reviewer", "reviewer>publish"},
			want: map[string]int{"input": 0, "writer": 1, "reviewer": 2, "publish": 3}, back: []string{"reviewer>writer"}},
		{name: "itself", agents: "a", edges: []string{"a>a"}, want: map[string]int{"a": 0}, back: []string{"a>a"}},
		{name: "an edge from an agent the graph has not", agents: "a", edges: []string{"gone>a"}, want: map[string]int{"a": 0}},
		{name: "seven agents", agents: "fetch parse lint test review fix report",
			edges: []string{"fetch>parse", "parse>lint", "parse>test", "parse>review", "lint>fix", "test>fix", "review>fix", "fix>report", "review>report"},
			want:  map[string]int{"fetch": 0, "parse": 1, "lint": 2, "test": 2, "review": 2, "fix": 3, "report": 4}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			var nodes []*GraphNode
			for _, n := range strings.Fields(c.agents) {
				nodes = append(nodes, &GraphNode{Name: n})
			}
			var edges []GraphEdge
			for _, e := range c.edges {
				from, to, _ := strings.Cut(e, ">")
				edges = append(edges, GraphEdge{From: from, To: to})
			}
			layer(nodes, edges)
			got := map[string]int{}
			for _, n := range nodes {
				got[n.Name] = n.Layer
			}
			if !maps.Equal(got, c.want) {
				t.Errorf("layers %v, want %v", got, c.want)
			}
			var back []string
			for _, e := range edges {
				if e.Back {
					back = append(back, e.From+">"+e.To)
				}
			}
			if !slices.Equal(back, c.back) {
				t.Errorf("back edges %v, want %v", back, c.back)
			}
		})
	}
}

// A long chain is layered without recursion.
func TestLayerLongChain(t *testing.T) {
	t.Parallel()
	const n = 100000
	nodes := make([]*GraphNode, n)
	edges := make([]GraphEdge, 0, n)
	for i := range nodes {
		nodes[n-1-i] = &GraphNode{Name: "a" + strconv.Itoa(i)}
		if i > 0 {
			edges = append(edges, GraphEdge{From: "a" + strconv.Itoa(i-1), To: "a" + strconv.Itoa(i)})
		}
	}
	layer(nodes, edges)
	if nodes[0].Layer != n-1 {
		t.Errorf("the chain's last agent is in layer %d, want %d", nodes[0].Layer, n-1)
	}
}
