package cassette

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

func TestFileName(t *testing.T) {
	t.Parallel()
	for path, want := range map[string]string{
		"critic":                   "critic.yaml",
		"review_round/critic":      "review_round.critic.yaml",
		"summarize[2]":             "summarize[2].yaml",
		"loop/summarize[1]/critic": "loop.summarize[1].critic.yaml",
		"../etc/passwd":            "__.etc.passwd.yaml",
		"":                         "_.yaml",
	} {
		if got := FileName(path); got != want {
			t.Errorf("FileName(%q) = %q, want %q", path, got, want)
		}
	}
}

func TestHashNormalisation(t *testing.T) {
	t.Parallel()
	base := func() *Request {
		return &Request{Provider: "openai", Model: "m", System: "be brief",
			Messages: []Message{
				{Role: "user", Content: "hi\nthere"},
				{Role: "assistant", ToolCalls: []ToolCall{{ID: "call_1", Name: "t", Arguments: `{"a": 1, "b": [2]}`}}},
				{Role: "tool", ToolCallID: "call_1", ToolName: "t", Content: "ok"},
			}}
	}
	h := hashOf(base())
	same := map[string]func(r *Request){
		"other tool call IDs": func(r *Request) {
			r.Messages[1].ToolCalls[0].ID, r.Messages[2].ToolCallID = "x", "x"
		},
		"arguments reordered": func(r *Request) { r.Messages[1].ToolCalls[0].Arguments = `{"b":[2],"a":1}` },
		"CRLF line endings":   func(r *Request) { r.Messages[0].Content = "hi\r\nthere" },
	}
	for name, change := range same {
		r := base()
		change(r)
		if hashOf(r) != h {
			t.Errorf("%s changes the hash", name)
		}
	}
	differ := map[string]func(r *Request){
		"model":       func(r *Request) { r.Model = "m2" },
		"temperature": func(r *Request) { v := 0.0; r.Temperature = &v },
		"options":     func(r *Request) { r.Options = map[string]any{"reasoning_effort": "high"} },
		"system":      func(r *Request) { r.System = "be long" },
		"content":     func(r *Request) { r.Messages[0].Content = "hi" },
		"arguments":   func(r *Request) { r.Messages[1].ToolCalls[0].Arguments = `{"a": 2, "b": [2]}` },
		"error flag":  func(r *Request) { r.Messages[2].IsError = true },
		"tools":       func(r *Request) { r.Tools = []Tool{{Name: "t"}} },
		"output":      func(r *Request) { r.Output = &Output{Name: "x", Schema: map[string]any{"type": "object"}} },
	}
	for name, change := range differ {
		r := base()
		change(r)
		if hashOf(r) == h {
			t.Errorf("a different %s keeps the hash", name)
		}
	}
}

// TestSameRequestServedInOrder: identical requests take their recordings
// in order, the last one again when there are more requests.
func TestSameRequestServedInOrder(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	rec, err := Open(Options{Dir: dir, Mode: Record})
	if err != nil {
		t.Fatal(err)
	}
	req := &Request{Provider: "openai", Model: "m", Messages: []Message{{Role: "user", Content: "again"}}}
	for _, text := range []string{"one", "two"} {
		if err := rec.Record("a", req, &Response{Text: text}, nil); err != nil {
			t.Fatal(err)
		}
	}
	play, err := Open(Options{Dir: dir, Mode: Replay})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for range 3 {
		resp, err := play.Replayed("a", req)
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, resp.Text)
	}
	if strings.Join(got, " ") != "one two two" {
		t.Fatalf("served %v", got)
	}
}

func TestBadFiles(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	write := func(name, body string) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("old.yaml", "version: 7\nagent: old\n")
	write("typo.yaml", "version: 1\nagent: typo\nexchange: []\n")
	write("empty.yaml", "")
	if err := syscall.Mkfifo(filepath.Join(dir, "fifo.yaml"), 0o644); err != nil {
		t.Fatal(err)
	}
	c, err := Open(Options{Dir: dir, Mode: Replay})
	if err != nil {
		t.Fatal(err)
	}
	req := &Request{Provider: "openai", Model: "m"}
	for agent, want := range map[string]string{
		"old":   "version 7, want 1",
		"typo":  "field exchange not found",
		"empty": "empty.yaml has no model exchanges",
		"fifo":  "fifo.yaml is not a regular file", // not waited on for ever
	} {
		_, err := c.Replayed(agent, req)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want %q", agent, err, want)
		}
	}
}

func TestDiff(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ a, b, want string }{
		{"a\nb\nc", "a\nB\nc", "  a\n- b\n+ B\n  c\n"},
		{"1\n2\n3\n4\n5\n6\n7", "1\n2\n3\n4\n5\n6\nseven", "  5\n  6\n- 7\n+ seven\n"},
		{"x\n1\n2\n3\n4\n5\n6\ny", "X\n1\n2\n3\n4\n5\n6\nY", "- x\n+ X\n  1\n  2\n  …\n  5\n  6\n- y\n+ Y\n"},
		{"", "new", "+ new\n"},
		{"same", "same", "  (the same text)\n"},
		{"a\n\nb", "a\n\nB", "  a\n\n- b\n+ B\n"},   // a blank line has no trailing space
		{"a\n\nb", "a\nx\nb", "  a\n-\n+ x\n  b\n"}, // nor a removed blank line
	} {
		if got := Diff(tc.a, tc.b); got != tc.want {
			t.Errorf("Diff(%q, %q) =\n%s\nwant\n%s", tc.a, tc.b, got, tc.want)
		}
	}
}

// TestRecordOverwritesOnlyRecordings: a file in the folder that is not a
// recording (an ensemble file) is never replaced.
func TestRecordOverwritesOnlyRecordings(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	ens := filepath.Join(dir, "ensemble.yaml")
	if err := os.WriteFile(ens, []byte("name: x\nagents: []\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	c, err := Open(Options{Dir: dir, Mode: Record})
	if err != nil {
		t.Fatal(err)
	}
	req := &Request{Provider: "openai", Model: "m"}
	err = c.Record("ensemble", req, &Response{Text: "x"}, nil)
	if err == nil || !strings.Contains(err.Error(), "record into a folder of its own") {
		t.Fatalf("err %v", err)
	}
	if b, _ := os.ReadFile(ens); string(b) != "name: x\nagents: []\n" {
		t.Fatalf("the ensemble file was replaced: %s", b)
	}
	// A recording is replaced.
	for range 2 {
		c, _ := Open(Options{Dir: dir, Mode: Record})
		if err := c.Record("a", req, &Response{Text: "x"}, nil); err != nil {
			t.Fatal(err)
		}
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "a.yaml")); strings.Count(string(b), "request:") != 1 {
		t.Fatalf("recorded twice:\n%s", b)
	}
}

// TestRecordContinue: a recording reopened with Continue (a resumed run)
// adds to the agent's file; reopened without, it starts the file afresh.
func TestRecordContinue(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		cont bool
		want string
	}{{true, "first second"}, {false, "second"}} {
		dir := t.TempDir()
		record := func(text string, cont bool) {
			rec, err := Open(Options{Dir: dir, Mode: Record, Continue: cont})
			if err != nil {
				t.Fatal(err)
			}
			req := &Request{Provider: "openai", Model: "m", Messages: []Message{{Role: "user", Content: text}}}
			if err := rec.Record("a", req, &Response{Text: text}, nil); err != nil {
				t.Fatal(err)
			}
		}
		record("first", false)
		record("second", tc.cont)
		play, err := Open(Options{Dir: dir, Mode: Replay})
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, text := range []string{"first", "second"} {
			req := &Request{Provider: "openai", Model: "m", Messages: []Message{{Role: "user", Content: text}}}
			if resp, err := play.Replayed("a", req); err == nil {
				got = append(got, resp.Text)
			}
		}
		if strings.Join(got, " ") != tc.want {
			t.Errorf("Continue %v: replays %v, want %s", tc.cont, got, tc.want)
		}
	}
}
