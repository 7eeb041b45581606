package ensemble_test

import (
	"bytes"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ensemble-run/ensemble/internal/graph"
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

// wideTree writes levels+1 files in dir: l0.yaml .. l<levels>.yaml, each of
// k agents, every agent of a level running the next level's file (the
// last level's agents ask). Drawn without folding, level n has k^n copies.
func wideTree(t *testing.T, dir string, levels, k int) string {
	t.Helper()
	for l := 0; l <= levels; l++ {
		var b strings.Builder
		fmt.Fprintf(&b, "name: l%d\nagents:\n", l)
		for i := range k {
			if l == levels {
				fmt.Fprintf(&b, "  - {name: a%d, ask: q}\n", i)
			} else {
				fmt.Fprintf(&b, "  - {name: a%d, ensemble: l%d.yaml}\n", i, l+1)
			}
		}
		writeFile(t, filepath.Join(dir, fmt.Sprintf("l%d.yaml", l)), b.String())
	}
	return filepath.Join(dir, "l0.yaml")
}

// TestDrawingFoldsRepeatedChildren: a file run by many agents is drawn
// once, later agents linked to it, so the drawing of a wide tree grows
// with its files and their agents, not with the paths through them.
func TestDrawingFoldsRepeatedChildren(t *testing.T) {
	t.Parallel()
	const k = 10
	for _, format := range []string{"mermaid", "dot"} {
		var lines []int
		for levels := 1; levels <= 4; levels++ {
			e, err := load(t, wideTree(t, t.TempDir(), levels, k))
			if err != nil {
				t.Fatal(err)
			}
			var b bytes.Buffer
			if err := graph.WriteDepth(&b, e, format, levels); err != nil {
				t.Fatal(err)
			}
			out := b.String()
			sub := "subgraph c"
			if format == "dot" {
				sub = "subgraph \"cluster_"
			}
			if got := strings.Count(out, sub); got != levels {
				t.Errorf("%s, %d levels: %d subgraphs, want one a file (%d)", format, levels, got, levels)
			}
			// One reference to an already drawn file per agent, but for
			// the first agent of each level.
			if got, want := strings.Count(out, "same file"), levels*(k-1); got != want {
				t.Errorf("%s, %d levels: %d folded references, want %d", format, levels, got, want)
			}
			n := strings.Count(out, "\n")
			// Each file: its k agents, its k references to the next, and
			// a few lines of its own.
			if bound := (levels+1)*(2*k+8) + 10; n > bound {
				t.Errorf("%s, %d levels: %d lines, more than %d", format, levels, n, bound)
			}
			lines = append(lines, n)
		}
		// Linear: each level adds the same number of lines.
		for i := 2; i < len(lines); i++ {
			if lines[i]-lines[i-1] != lines[1]-lines[0] {
				t.Errorf("%s: lines by levels %v do not grow linearly", format, lines)
			}
		}
	}
}

// A file drawn first where it is deep is drawn as deep as its shallowest
// reference needs: leaf.yaml, run by mid.yaml and by the root, shows its
// own child at --depth 2.
func TestDrawingFoldKeepsDepth(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "root.yaml"), "name: root\nagents:\n  - {name: a, ensemble: mid.yaml}\n  - {name: b, ensemble: leaf.yaml}\n")
	writeFile(t, filepath.Join(dir, "mid.yaml"), "name: mid\nagents:\n  - {name: m, ensemble: leaf.yaml}\n")
	writeFile(t, filepath.Join(dir, "leaf.yaml"), "name: leaf\nagents:\n  - {name: l, ensemble: last.yaml}\n")
	writeFile(t, filepath.Join(dir, "last.yaml"), "name: last\nagents:\n  - {name: q, ask: q}\n")
	e, err := load(t, filepath.Join(dir, "root.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	for _, format := range []string{"mermaid", "dot"} {
		var b bytes.Buffer
		if err := graph.WriteDepth(&b, e, format, 2); err != nil {
			t.Fatal(err)
		}
		for _, w := range []string{"a/m: leaf", "a/m/l: last", "same file"} {
			if !strings.Contains(b.String(), w) {
				t.Errorf("%s: no %q in\n%s", format, w, b.String())
			}
		}
	}
}
