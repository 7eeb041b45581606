package graph

import "testing"

func TestEscapeLabels(t *testing.T) {
	if got := mermaidText([]string{`a "b" #1 <c> & d|e ` + "`f`", "line\ttwo"}); got != `a #quot;b#quot; #35;1 #lt;c#gt; #amp; d#124;e #96;f#96;<br/>line two` {
		t.Errorf("mermaid: %s", got)
	}
	if got := dotLabel([]string{`say "hi" \d`, "two\nlines"}); got != `"say \"hi\" \\d\ntwo lines"` {
		t.Errorf("dot: %s", got)
	}
}

// BackEdges is backEdges, for the tests of package graph_test.
var BackEdges = backEdges
