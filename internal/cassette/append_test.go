package cassette

import (
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// step is one entry recorded: an exchange, a tool result or an answer.
type step struct {
	kind string
	n    int
}

func (s step) record(c *Cassette) error {
	switch s.kind {
	case kindExchanges:
		req := &Request{Provider: "openai", Model: "m", Messages: []Message{{Role: "user", Content: fmt.Sprintf("q%d\nsecond line", s.n)}}}
		return c.Record("a", req, &Response{Text: fmt.Sprintf("r%d\nmore", s.n), StopReason: "end_turn"}, nil)
	case kindTools:
		return c.RecordTool("a", ToolResult{Tool: "t", Arguments: fmt.Sprintf(`{"n": %d}`, s.n), Result: "ok"}, nil)
	default:
		return c.RecordAnswer("a", fmt.Sprintf("question %d?", s.n), fmt.Sprintf("answer %d", s.n))
	}
}

// loaded is what a new run reads from the agent's file.
func loaded(t *testing.T, dir string) *file {
	t.Helper()
	f := &file{path: filepath.Join(dir, "a.yaml")}
	if err := f.load(); err != nil {
		b, _ := os.ReadFile(f.path)
		t.Fatalf("%v\n%s", err, b)
	}
	return f
}

func sameEntries(t *testing.T, got, want *file) {
	t.Helper()
	if !reflect.DeepEqual(got.Exchanges, want.Exchanges) || !reflect.DeepEqual(got.Tools, want.Tools) || !reflect.DeepEqual(got.Answers, want.Answers) {
		t.Fatalf("loaded %d exchanges, %d tool results, %d answers; want %d, %d, %d",
			len(got.Exchanges), len(got.Tools), len(got.Answers), len(want.Exchanges), len(want.Tools), len(want.Answers))
	}
}

var appendCases = []struct {
	name  string
	steps []step
}{
	{"exchanges", []step{{kindExchanges, 1}, {kindExchanges, 2}, {kindExchanges, 3}}},
	{"a tool loop", []step{{kindExchanges, 1}, {kindTools, 1}, {kindExchanges, 2}, {kindTools, 2}, {kindTools, 3}, {kindExchanges, 3}}},
	{"answers", []step{{kindAnswers, 1}, {kindExchanges, 1}, {kindAnswers, 2}, {kindAnswers, 3}, {kindExchanges, 2}}},
}

// TestRecordAppends: after the first write of a run, every entry is
// appended to the file (the same file, not a new one renamed over it), and
// after every write the file reads back as everything recorded so far, in
// order.
func TestRecordAppends(t *testing.T) {
	t.Parallel()
	for _, tc := range appendCases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			c, err := Open(Options{Dir: dir, Mode: Record, Tools: true})
			if err != nil {
				t.Fatal(err)
			}
			var first os.FileInfo
			for i, s := range tc.steps {
				if err := s.record(c); err != nil {
					t.Fatal(err)
				}
				sameEntries(t, loaded(t, dir), c.files["a"])
				st, err := os.Stat(filepath.Join(dir, "a.yaml"))
				if err != nil {
					t.Fatal(err)
				}
				if i == 0 {
					first = st
				} else if !os.SameFile(first, st) {
					t.Fatalf("step %d: the file was replaced, not appended to", i+1)
				}
			}
		})
	}
}

// TestRecordMissingAppends: --record-missing adds to a recording made
// before appending existed (no end line), and the result reads back whole.
func TestRecordMissingAppends(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	old := "# An ensemble recording.\nversion: 1\nagent: a\nexchanges:\n  - request:\n      provider: openai\n      model: m\n      messages:\n        - role: user\n          content: old\n    response:\n      text: old reply\n"
	if err := os.WriteFile(filepath.Join(dir, "a.yaml"), []byte(old), 0o644); err != nil {
		t.Fatal(err)
	}
	c, err := Open(Options{Dir: dir, Mode: RecordMissing, Tools: true})
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range appendCases[1].steps {
		if resp, err := c.Replayed("a", &Request{Provider: "openai", Model: "m", Messages: []Message{{Role: "user", Content: "old"}}}); err != nil || resp.Text != "old reply" {
			t.Fatalf("%v %v", resp, err)
		}
		if err := s.record(c); err != nil {
			t.Fatal(err)
		}
		got := loaded(t, dir)
		sameEntries(t, got, c.files["a"])
		if got.Exchanges[0].Response.Text != "old reply" {
			t.Fatalf("the old exchange is gone: %+v", got.Exchanges[0])
		}
	}
}

// TestTornAppend: a run killed while appending an entry leaves the file
// without its end line, the entry cut anywhere; the next run reads every
// entry before it, and nothing of the cut one.
func TestTornAppend(t *testing.T) {
	t.Parallel()
	for _, tc := range appendCases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			c, err := Open(Options{Dir: dir, Mode: Record, Tools: true})
			if err != nil {
				t.Fatal(err)
			}
			path := filepath.Join(dir, "a.yaml")
			steps := tc.steps
			for _, s := range steps[:len(steps)-1] {
				if err := s.record(c); err != nil {
					t.Fatal(err)
				}
			}
			before, _ := os.ReadFile(path)
			want := loaded(t, dir)
			if err := steps[len(steps)-1].record(c); err != nil {
				t.Fatal(err)
			}
			after, _ := os.ReadFile(path)
			start := len(before) - len(endLine) // where the append began
			if !strings.HasPrefix(string(after), string(before[:start])) {
				t.Fatalf("the append changed what was before it")
			}
			// Every cut of the appended bytes: the write stopped there,
			// over the end line it was replacing. (Cut after its end line's
			// "# end", the entry is whole.)
			for cut := start + 1; cut < len(after)-1; cut++ {
				torn := after[:cut]
				if cut < len(before) {
					torn = append(torn[:cut:cut], before[cut:]...)
				}
				if err := os.WriteFile(path, torn, 0o644); err != nil {
					t.Fatal(err)
				}
				sameEntries(t, loaded(t, dir), want)
			}
		})
	}
}

// TestEditedEnd: a file whose end line an editor kept, but without its
// newline or with blank lines after it, is whole.
func TestEditedEnd(t *testing.T) {
	t.Parallel()
	for _, edit := range []func(string) string{
		func(s string) string { return strings.TrimSuffix(s, "\n") },
		func(s string) string { return s + "\n\n" },
		func(s string) string { return strings.ReplaceAll(s, "\n", "\r\n") },
	} {
		dir := t.TempDir()
		c, err := Open(Options{Dir: dir, Mode: Record, Tools: true})
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range appendCases[1].steps {
			if err := s.record(c); err != nil {
				t.Fatal(err)
			}
		}
		path := filepath.Join(dir, "a.yaml")
		b, _ := os.ReadFile(path)
		if err := os.WriteFile(path, []byte(edit(string(b))), 0o644); err != nil {
			t.Fatal(err)
		}
		got := loaded(t, dir)
		if len(got.Exchanges) != 3 || len(got.Tools) != 3 {
			t.Fatalf("%d exchanges, %d tool results, want 3 and 3", len(got.Exchanges), len(got.Tools))
		}
	}
}

// TestMissNamesTheParameter: a request that differs in a parameter (not
// the model) is not said to differ in its model.
func TestMissNamesTheParameter(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	rec, err := Open(Options{Dir: dir, Mode: Record})
	if err != nil {
		t.Fatal(err)
	}
	req := Request{Provider: "openai", Model: "m", Messages: []Message{{Role: "user", Content: "hi"}}}
	if err := rec.Record("a", &req, &Response{Text: "ok"}, nil); err != nil {
		t.Fatal(err)
	}
	play, err := Open(Options{Dir: dir, Mode: Replay})
	if err != nil {
		t.Fatal(err)
	}
	temp := 0.5
	req.Temperature = &temp
	_, err = play.Replayed("a", &req)
	if want := "the model or a parameter differs from the closest recorded request's (exchange 1):\n- openai m\n+ openai m, temperature 0.5\n"; err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("%v, want %q", err, want)
	}
}
