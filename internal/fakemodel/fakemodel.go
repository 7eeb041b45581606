// Package fakemodel is the model server of the tests: an httptest server on
// 127.0.0.1 that speaks the OpenAI Chat Completions wire format (which
// Ollama's /v1 speaks too), plain or streamed as server-sent events, and
// the Anthropic Messages format at /v1/messages. Its replies come from a
// function of the request; it can wait before each reply, counts the same
// usage for every reply unless a reply says otherwise (what the tests'
// cost assertions rest on), and records every request as it was received.
//
//	srv := fakemodel.New(t, func(r fakemodel.Request) fakemodel.Reply {
//		if r.Last().Role == "tool" {
//			return fakemodel.Reply{Text: "the tool said " + r.Last().Content}
//		}
//		return fakemodel.Reply{Calls: []fakemodel.Call{{Name: "lookup", Args: `{}`}}}
//	}, fakemodel.WithUsage(100, 20))
//	// base_url: srv.URL()
package fakemodel

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

// Usage is the tokens a reply counts.
type Usage struct{ In, Out int }

// DefaultUsage is what a reply counts unless the server or the reply says
// otherwise.
var DefaultUsage = Usage{In: 10, Out: 5}

// Call is one tool call of a reply. An empty ID is call_1, call_2, … by
// position.
type Call struct{ ID, Name, Args string }

// Reply is what the server answers one request.
type Reply struct {
	Text   string
	Calls  []Call
	Chunks []string // a streamed reply's text in these pieces (default: Text in one)
	Finish string   // default "stop", or "tool_calls" when there are Calls
	Usage  *Usage   // default: the server's usage
	// Status, when set, answers with this HTTP status and Error as the
	// message, in the error shape of the wire format.
	Status int
	Error  string
	// Raw, when set, is the body, written as it is (application/json).
	Raw string
	// Hang answers nothing: the request waits until its client gives up
	// or the server closes.
	Hang bool
}

// Text is a reply function that always says s.
func Text(s string) func(Request) Reply {
	return func(Request) Reply { return Reply{Text: s} }
}

// Option sets up a server.
type Option func(*Server)

// WithDelay waits d before each reply (or until the client gives up).
func WithDelay(d time.Duration) Option { return func(s *Server) { s.delay = d } }

// WithUsage is the usage of every reply that does not set its own.
func WithUsage(in, out int) Option { return func(s *Server) { s.usage = Usage{in, out} } }

// WithHandler answers with h instead of a reply function, for a test of a
// wire format's edge cases: the request is still recorded (and its body
// read) before h runs.
func WithHandler(h func(req Request, w http.ResponseWriter, r *http.Request)) Option {
	return func(s *Server) { s.handler = h }
}

// Server is a fake model server, closed when its test ends.
type Server struct {
	srv     *httptest.Server
	reply   func(Request) Reply
	handler func(Request, http.ResponseWriter, *http.Request)
	delay   time.Duration
	usage   Usage

	mu   sync.Mutex
	reqs []Request
}

// New starts a server that answers with reply (nil: "ok").
func New(t testing.TB, reply func(Request) Reply, opts ...Option) *Server {
	t.Helper()
	if reply == nil {
		reply = Text("ok")
	}
	s := &Server{reply: reply, usage: DefaultUsage}
	for _, o := range opts {
		o(s)
	}
	s.srv = httptest.NewServer(http.HandlerFunc(s.serve))
	t.Cleanup(s.srv.Close)
	return s
}

// URL is the base URL of its API, the root followed by /v1: what an
// OpenAI-compatible profile's base_url names.
func (s *Server) URL() string { return s.srv.URL + "/v1" }

// Root is the server's URL without a path (an Anthropic profile's base_url).
func (s *Server) Root() string { return s.srv.URL }

// Client is an HTTP client for the server.
func (s *Server) Client() *http.Client { return s.srv.Client() }

// Addr is the host:port it listens on.
func (s *Server) Addr() string { return s.srv.Listener.Addr().String() }

// Close stops the server now.
func (s *Server) Close() { s.srv.Close() }

// Requests are the requests received so far, in order.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.reqs...)
}

// Count is how many requests it received.
func (s *Server) Count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.reqs)
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	req := read(r)
	s.mu.Lock()
	req.N = len(s.reqs)
	s.reqs = append(s.reqs, req)
	s.mu.Unlock()
	if s.handler != nil {
		s.handler(req, w, r)
		return
	}
	rep := s.reply(req)
	if !wait(r.Context(), s.delay) {
		return
	}
	if rep.Hang {
		<-r.Context().Done()
		return
	}
	if rep.Usage == nil {
		u := s.usage
		rep.Usage = &u
	}
	anthropic := strings.HasSuffix(r.URL.Path, "/messages")
	switch {
	case rep.Raw != "":
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, rep.Raw)
	case rep.Status != 0:
		writeError(w, anthropic, rep.Status, rep.Error)
	case anthropic && req.Stream:
		anthropicStream(w, rep)
	case anthropic:
		writeJSON(w, anthropicBody(req, rep))
	case req.Stream:
		chatStream(w, req, rep)
	default:
		writeJSON(w, chatBody(req, rep))
	}
}

// wait waits d, or until ctx ends: false then.
func wait(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return true
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(v)
}

func writeError(w http.ResponseWriter, anthropic bool, status int, msg string) {
	body := map[string]any{"error": map[string]any{"message": msg, "type": "invalid_request_error"}}
	if anthropic {
		body["type"] = "error"
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(body)
}
