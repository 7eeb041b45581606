package bdd

import (
	"bytes"
	"strings"
	"testing"
)

// gfmCells splits a row of a GitHub-flavoured Markdown table as GitHub
// does: at each pipe that no backslash escapes (a backslash escapes the
// character after it, a backslash too), code spans included.
func gfmCells(row string) []string {
	row = strings.TrimSpace(row)
	row = strings.TrimPrefix(row, "|")
	var cells []string
	var cell strings.Builder
	for i := 0; i < len(row); i++ {
		switch c := row[i]; {
		case c == '\\' && i+1 < len(row):
			cell.WriteByte(c)
			cell.WriteByte(row[i+1])
			i++
		case c == '|':
			cells = append(cells, cell.String())
			cell.Reset()
		default:
			cell.WriteByte(c)
		}
	}
	if strings.TrimSpace(cell.String()) != "" {
		cells = append(cells, cell.String())
	}
	return cells
}

// A scenario's name and path are anyone's text: a pipe (escaped or not),
// a line break or a backquote in them must not add cells or rows to the
// Markdown table.
func TestMarkdownTableHoldsAnyName(t *testing.T) {
	t.Parallel()
	names := []string{`plain`, `a | b`, `a \| b`, "two\nlines", "cr\rhere", "`code` and ``two``", `ends with \`, `<b>bold</b> *x* [l](u)`}
	paths := []string{"features/a.feature", "fea`tures/a|b.feature", `odd\dir/x.feature`}
	var ts []*tracked
	for i, n := range names {
		p := &planned{file: paths[i%len(paths)], path: paths[i%len(paths)], name: n, maxRuns: 2, need: 1, keyword: "Scenario"}
		ts = append(ts, &tracked{planned: p, verdict: passing, passes: 1, runs: []*runResult{{n: 1, passed: true}}})
	}
	rr := &repeatRun{ts: ts}
	base := &Baseline{Version: 1, Scenarios: map[string]map[string]BaselineEntry{}}
	for _, tr := range ts[:3] {
		if base.Scenarios[tr.path] == nil {
			base.Scenarios[tr.path] = map[string]BaselineEntry{}
		}
		base.Scenarios[tr.path][tr.name] = BaselineEntry{Passes: 1, Runs: 1}
	}
	for _, tc := range []struct {
		name  string
		cmp   []*comparison
		cells int
	}{
		{"alone", nil, 4},
		{"with a baseline", compare(base, ts), 6},
	} {
		var b bytes.Buffer
		writeMarkdown(&b, rr, tc.cmp, "base|line.json")
		rows := 0
		for _, line := range strings.Split(b.String(), "\n") {
			if !strings.HasPrefix(line, "|") {
				continue
			}
			rows++
			if got := len(gfmCells(line)); got != tc.cells {
				t.Errorf("%s: a row of %d cells, want %d: %s", tc.name, got, tc.cells, line)
			}
		}
		if want := len(names) + 2; rows != want {
			t.Errorf("%s: %d rows, want %d:\n%s", tc.name, rows, want, b.String())
		}
	}
	for _, tc := range []struct{ in, want string }{
		{"a`b", "`` a`b ``"},
		{"`a", "`` `a ``"},
		{"a|b", "`a\\|b`"},
	} {
		if got := mdCode(tc.in); got != tc.want {
			t.Errorf("mdCode(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}
