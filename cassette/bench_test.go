package cassette

import (
	"fmt"
	"strings"
	"testing"
)

// benchRequest is a tool loop's request late in a long conversation: 40
// messages of about 1 KiB and a tool with a schema.
func benchRequest(i int) *Request {
	r := &Request{Provider: "openai", Model: "m", System: strings.Repeat("be careful. ", 50),
		Tools: []Tool{{Name: "t", Description: "a tool", Schema: map[string]any{"type": "object",
			"properties": map[string]any{"q": map[string]any{"type": "string"}}}}}}
	for k := range 40 {
		r.Messages = append(r.Messages, Message{Role: "user", Content: fmt.Sprintf("%d %d %s", i, k, strings.Repeat("x", 1000))})
	}
	return r
}

// BenchmarkReplayed is the cost a replay adds to one model request: the
// request's hash and its lookup among 20 recorded exchanges.
func BenchmarkReplayed(b *testing.B) {
	dir := b.TempDir()
	rec, err := Open(Options{Dir: dir, Mode: Record})
	if err != nil {
		b.Fatal(err)
	}
	for i := range 20 {
		if err := rec.Record("a", benchRequest(i), &Response{Text: "ok"}, nil); err != nil {
			b.Fatal(err)
		}
	}
	play, err := Open(Options{Dir: dir, Mode: Replay})
	if err != nil {
		b.Fatal(err)
	}
	req := benchRequest(7)
	b.ReportAllocs()
	for b.Loop() {
		if resp, err := play.Replayed("a", req); err != nil || resp.Text != "ok" {
			b.Fatal(resp, err)
		}
	}
}

// BenchmarkRecord is the cost of recording one exchange of that size into
// a file that already holds 20 (the file is rewritten whole).
func BenchmarkRecord(b *testing.B) {
	dir := b.TempDir()
	rec, err := Open(Options{Dir: dir, Mode: Record})
	if err != nil {
		b.Fatal(err)
	}
	for i := range 20 {
		if err := rec.Record("a", benchRequest(i), &Response{Text: "ok"}, nil); err != nil {
			b.Fatal(err)
		}
	}
	req := benchRequest(99)
	f := rec.files["a"]
	b.ReportAllocs()
	for b.Loop() {
		f.Exchanges = f.Exchanges[:20]
		if err := rec.Record("a", req, &Response{Text: "ok"}, nil); err != nil {
			b.Fatal(err)
		}
	}
}
