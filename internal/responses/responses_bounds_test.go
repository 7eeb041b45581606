package responses

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A file of many small entries reports its first MaxResponseErrors
// problems and counts the others, from either reader.
func TestResponsesErrorsAreCapped(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct{ name, line, extra string }{
		{"fast reader", "writer: [x]\n", ""},
		{"YAML reader", "writer: [x]\n", "other: &a [x]\n"}, // an anchor: the YAML parser reads it
		{"YAML reader, other errors", "writer: 1\n", ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			const n = 5000
			doc := strings.Repeat(tt.line, n) + tt.extra
			if tt.line == "writer: 1\n" {
				var b strings.Builder
				for i := range n {
					fmt.Fprintf(&b, "w%d: 1\n", i)
				}
				doc = b.String()
			}
			_, err := ParseResponses("r.yaml", []byte(doc))
			if err == nil {
				t.Fatal("no error")
			}
			lines := strings.Split(err.Error(), "\n")
			if len(lines) != MaxResponseErrors+1 {
				t.Fatalf("%d lines of errors, want %d:\n%.500s", len(lines), MaxResponseErrors+1, err)
			}
			if last := lines[len(lines)-1]; !strings.Contains(last, "more errors") {
				t.Errorf("last line %q, want a count of the others", last)
			}
		})
	}
}

// A file past MaxResponseEntries is refused at the line over the cap, by
// either reader, before its values are built.
func TestResponsesEntriesAreCapped(t *testing.T) {
	t.Parallel()
	var b bytes.Buffer
	b.WriteString("writer:\n")
	for range MaxResponseEntries {
		b.WriteString("- x\n")
	}
	over := fmt.Sprintf("r.yaml:%d:1: more than %d entries", MaxResponseEntries+1, MaxResponseEntries)
	fast := b.Bytes()
	slow := append(bytes.Clone(fast), "other: &a [x]\n"...)
	for name, data := range map[string][]byte{"fast": fast, "YAML": slow} {
		_, err := ParseResponses("r.yaml", data)
		if err == nil || !strings.HasPrefix(err.Error(), over) {
			t.Errorf("%s reader: error %.300v, want %q", name, err, over)
		}
	}
	// One below the cap is read.
	under := bytes.TrimSuffix(fast, []byte("- x\n"))
	if r, err := ParseResponses("r.yaml", under); err != nil || len(r.Entry("writer").Values) != MaxResponseEntries-1 {
		t.Errorf("under the cap: %.300v", err)
	}
	// A flow list counts its items.
	flow := "writer: [" + strings.Repeat("x, ", MaxResponseEntries) + "x]\n"
	if _, err := ParseResponses("r.yaml", []byte(flow)); err == nil || !strings.Contains(err.Error(), "more than") {
		t.Errorf("flow list: %.300v", err)
	}
}

// LoadResponsesFor reports the file's problems and the ensemble's in one
// capped list: the first MaxResponseErrors in order, then one count of all
// the others.
func TestLoadResponsesForCapsAllProblems(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "r.yaml")
	var b strings.Builder
	for i := range 30 {
		fmt.Fprintf(&b, "bad%d: 1\n", i) // not a list: a problem of the file
	}
	for i := range 30 {
		fmt.Fprintf(&b, "ghost%d: [x]\n", i) // no such agent: a problem for the ensemble
	}
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := LoadResponsesFor(path, analysisEnsemble(t))
	if err == nil {
		t.Fatal("no error")
	}
	lines := strings.Split(err.Error(), "\n")
	if len(lines) != MaxResponseErrors+1 || !strings.HasPrefix(lines[0], path+":1:") || lines[len(lines)-1] != path+": …and 40 more errors" {
		t.Errorf("%d lines, first %q, last %q", len(lines), lines[0], lines[len(lines)-1])
	}
}
