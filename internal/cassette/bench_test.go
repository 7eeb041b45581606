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
// a file that already holds 20 (it is appended: the cost does not grow
// with the file).
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
	b.ReportAllocs()
	for b.Loop() {
		if err := rec.Record("a", req, &Response{Text: "ok"}, nil); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkRecordConversation records a conversation of n exchanges of
// that size into one agent's file, from the start: ns/exchange stays flat
// as n grows when an exchange costs its own size, and grows with n when
// each one rewrites the file.
func BenchmarkRecordConversation(b *testing.B) {
	for _, n := range []int{10, 40, 160} {
		b.Run(fmt.Sprintf("exchanges=%d", n), func(b *testing.B) {
			reqs := make([]*Request, n)
			for i := range reqs {
				reqs[i] = benchRequest(i)
			}
			b.ReportAllocs()
			for b.Loop() {
				rec, err := Open(Options{Dir: b.TempDir(), Mode: Record})
				if err != nil {
					b.Fatal(err)
				}
				for _, req := range reqs {
					if err := rec.Record("a", req, &Response{Text: "ok"}, nil); err != nil {
						b.Fatal(err)
					}
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/exchange")
		})
	}
}
