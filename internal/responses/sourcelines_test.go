package responses

import (
	"fmt"
	"strings"
	"testing"
)

// sourceLine finds every line of a file, across the marks it keeps every
// linesPerMark lines, with or without a last newline, CRs dropped, and ""
// past the end; the marks take one offset per linesPerMark lines.
func TestSourceLines(t *testing.T) {
	t.Parallel()
	var b strings.Builder
	const n = 3*linesPerMark + 7
	for i := 1; i <= n; i++ {
		fmt.Fprintf(&b, "line %d\r\n", i)
	}
	for _, data := range []string{b.String(), strings.TrimSuffix(b.String(), "\n")} {
		lines := newSourceLines([]byte(data))
		for i := 1; i <= n; i++ {
			if got, want := sourceLine(lines, i), fmt.Sprintf("line %d", i); got != want {
				t.Fatalf("line %d: %q, want %q", i, got, want)
			}
		}
		if got := sourceLine(lines, n+2); got != "" {
			t.Errorf("past the end: %q", got)
		}
		if len(lines.marks) != n/linesPerMark+1 {
			t.Errorf("%d marks for %d lines", len(lines.marks), n)
		}
	}
	if got := sourceLine(newSourceLines(nil), 1); got != "" {
		t.Errorf("an empty file: %q", got)
	}
}
