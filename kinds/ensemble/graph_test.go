package ensemble_test

import (
	"bytes"
	"strings"
	"testing"

	"github.com/ensemble-run/ensemble/graph"
)

// TestDrawing: child ensembles are drawn as subgraphs (clusters in DOT),
// --depth levels deep.
func TestDrawing(t *testing.T) {
	t.Parallel()
	e, err := load(t, "testdata/deep.yaml")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		format string
		depth  int
		want   []string
		not    []string
	}{
		{"mermaid", 0, []string{`a1[["outer<br/>ensemble: parent.yaml"]]`}, []string{"subgraph"}},
		{"mermaid", 1, []string{`subgraph c1["outer: parent"]`, `c1_2[["review_round<br/>ensemble: rounds/review.yaml<br/>output: verdict"]]`, "a1 -.- c1"}, []string{"outer/review_round: review"}},
		{"mermaid", 2, []string{`subgraph c2["outer/review_round: review"]`, "c1_2 -.- c2", "c2_1 --> c2_2"}, nil},
		{"dot", 2, []string{`label="outer/review_round: review";`, `"outer/review_round/critic" -> "outer/review_round/verdict";`, `"outer/review_round" -> "outer/review_round/critic" [style=dotted, arrowhead=none];`}, nil},
	} {
		var b bytes.Buffer
		if err := graph.WriteDepth(&b, e, c.format, c.depth); err != nil {
			t.Fatal(err)
		}
		for _, w := range c.want {
			if !strings.Contains(b.String(), w) {
				t.Errorf("%s depth %d: no %s in\n%s", c.format, c.depth, w, b.String())
			}
		}
		for _, w := range c.not {
			if strings.Contains(b.String(), w) {
				t.Errorf("%s depth %d: %s in\n%s", c.format, c.depth, w, b.String())
			}
		}
	}
}
