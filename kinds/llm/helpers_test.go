package llm

import (
	"encoding/json"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/ensemble-run/ensemble/agent"
	"github.com/ensemble-run/ensemble/ensemble"
	"github.com/ensemble-run/ensemble/events"
	"github.com/ensemble-run/ensemble/internal/fakemodel"
	"github.com/ensemble-run/ensemble/kinds/ask"
	"github.com/ensemble-run/ensemble/kinds/script"
)

const testKey = "sk-test-0123456789abcdef"

// recorded is one request the fake server received.
type recorded = fakemodel.Request

// fakeServer is the tests' model server with its URL (the root, without
// /v1), answering through a handler that gets the 0-based number of the
// request and writes the response: these tests hold the wire formats'
// edge cases.
type fakeServer struct {
	*fakemodel.Server
	URL string
}

// testKinds are the built-in kinds (package kinds imports this one).
var testKinds = []ensemble.Kind{script.Kind{}, Kind{}, ask.Kind{}}

func newFakeServer(t testing.TB, reply func(n int, req recorded, w http.ResponseWriter, r *http.Request)) *fakeServer {
	t.Helper()
	s := fakemodel.New(t, nil, fakemodel.WithHandler(func(req recorded, w http.ResponseWriter, r *http.Request) {
		reply(req.N, req, w, r)
	}))
	return &fakeServer{Server: s, URL: s.Root()}
}

func (fs *fakeServer) requests() []recorded { return fs.Requests() }

// scripted replies with the given bodies in order (the last one repeats).
func scripted(bodies ...string) func(int, recorded, http.ResponseWriter, *http.Request) {
	return func(n int, _ recorded, w http.ResponseWriter, _ *http.Request) {
		if n >= len(bodies) {
			n = len(bodies) - 1
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, bodies[n])
	}
}

// --- OpenAI Chat Completions wire format ---

type call struct{ id, name, args string }

func oaReply(finish, text string, in, out int, calls ...call) string {
	msg := map[string]any{"role": "assistant", "content": text}
	if text == "" && len(calls) > 0 {
		msg["content"] = nil
	}
	if len(calls) > 0 {
		var tcs []any
		for _, c := range calls {
			tcs = append(tcs, map[string]any{"id": c.id, "type": "function",
				"function": map[string]any{"name": c.name, "arguments": c.args}})
		}
		msg["tool_calls"] = tcs
	}
	b, _ := json.Marshal(map[string]any{
		"id": "chatcmpl-1", "object": "chat.completion", "created": 1700000000, "model": "gpt-test",
		"choices": []any{map[string]any{"index": 0, "message": msg, "finish_reason": finish, "logprobs": nil}},
		"usage":   map[string]any{"prompt_tokens": in, "completion_tokens": out, "total_tokens": in + out},
	})
	return string(b)
}

func oaText(text string) string { return oaReply("stop", text, 10, 5) }

func oaCalls(calls ...call) string { return oaReply("tool_calls", "", 20, 7, calls...) }

// --- Anthropic Messages wire format ---

func anReply(stop string, in, out int, blocks ...map[string]any) string {
	b, _ := json.Marshal(map[string]any{
		"id": "msg_1", "type": "message", "role": "assistant", "model": "claude-test",
		"content": blocks, "stop_reason": stop, "stop_sequence": nil,
		"usage": map[string]any{"input_tokens": in, "output_tokens": out},
	})
	return string(b)
}

func anText(text string) map[string]any { return map[string]any{"type": "text", "text": text} }

func anToolUse(id, name string, input any) map[string]any {
	return map[string]any{"type": "tool_use", "id": id, "name": name, "input": input}
}

// --- ensembles ---

func testdataDir(t testing.TB) string {
	t.Helper()
	d, err := filepath.Abs("testdata")
	if err != nil {
		t.Fatal(err)
	}
	return d
}

var (
	echoTool = &ensemble.Tool{Name: "echo", Description: "Echo the arguments", Script: "echo.sh",
		Parameters: map[string]any{"type": "object",
			"properties": map[string]any{"region": map[string]any{"type": "string"}},
			"required":   []any{"region"}}}
	sleepTool = &ensemble.Tool{Name: "sleep", Description: "Sleep", Script: "sleep.sh",
		Parameters: map[string]any{"type": "object",
			"properties": map[string]any{"seconds": map[string]any{"type": "number"}}}}
	rendezvousTool = &ensemble.Tool{Name: "rendezvous", Description: "Concurrency probe", Script: "rendezvous.sh",
		Parameters: map[string]any{"type": "object", "required": []any{"name"},
			"properties": map[string]any{"name": map[string]any{"type": "string"}, "after": map[string]any{"type": "string"}}}}
	failTool = &ensemble.Tool{Name: "fail", Description: "Always fails", Script: "fail.sh"}
	envTool  = &ensemble.Tool{Name: "env", Description: "Lists env", Script: "env.sh"}
)

// newEnsemble builds a one-agent ensemble around profile p (copied) and a
// fresh copy of the named tools.
func newEnsemble(t testing.TB, p ensemble.ModelProfile, a ensemble.Agent, tools ...*ensemble.Tool) (*ensemble.Ensemble, *ensemble.Agent) {
	t.Helper()
	dir := testdataDir(t)
	if p.Name == "" {
		p.Name = "test"
	}
	if a.Name == "" {
		a.Name = "analyst"
	}
	spec, _ := a.Spec.(*Spec)
	if spec == nil {
		spec = &Spec{}
	} else {
		c := *spec
		spec = &c
	}
	if spec.Prompt == "" {
		spec.Prompt = "You are a test agent."
	}
	a.Kind, a.Spec = Kind{}, spec
	spec.ModelProfile = p.Name
	e := &ensemble.Ensemble{Name: "t", Dir: dir, Models: map[string]*ensemble.ModelProfile{p.Name: &p}}
	for _, tl := range tools {
		c := *tl
		c.ScriptPath = filepath.Join(dir, c.Script)
		e.Tools = append(e.Tools, &c)
		spec.Tools = append(spec.Tools, c.Name)
	}
	e.Agents = []*ensemble.Agent{&a}
	e.Index()
	return e, &a
}

func openaiProfile(url string) ensemble.ModelProfile {
	return ensemble.ModelProfile{Provider: "openai", Model: "gpt-test", BaseURL: url, APIKeyEnv: "TEST_OPENAI_KEY"}
}

func anthropicProfile(url string) ensemble.ModelProfile {
	return ensemble.ModelProfile{Provider: "anthropic", Model: "claude-test", BaseURL: url, APIKeyEnv: "TEST_ANTHROPIC_KEY"}
}

func testEnv(name string) (string, bool) {
	switch name {
	case "TEST_OPENAI_KEY", "TEST_ANTHROPIC_KEY":
		return testKey, true
	}
	return "", false
}

func newTestRunner(opts Options) *Runner {
	if opts.LookupEnv == nil {
		opts.LookupEnv = testEnv
	}
	if opts.MaxRetries == 0 {
		opts.MaxRetries = -1
	}
	if opts.Environ == nil {
		opts.Environ = func() []string {
			return []string{"PATH=/usr/local/bin:/usr/bin:/bin", "TEST_OPENAI_KEY=" + testKey, "HOME=/tmp"}
		}
	}
	return New(opts)
}

// eventLog collects events.
type eventLog struct {
	mu  sync.Mutex
	evs []events.Event
}

func (l *eventLog) sink() events.Sink {
	return func(e events.Event) { l.mu.Lock(); l.evs = append(l.evs, e); l.mu.Unlock() }
}

// deltas are the texts of the log's text_delta events.
func (l *eventLog) deltas() []string {
	var out []string
	for _, ev := range l.all() {
		if ev.Type == events.TextDelta {
			out = append(out, ev.Message)
		}
	}
	return out
}

func (l *eventLog) all() []events.Event {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]events.Event(nil), l.evs...)
}

func request(e *ensemble.Ensemble, a *ensemble.Agent, input string) *agent.Request {
	return &agent.Request{Ensemble: e, Agent: a, Input: input, Turn: 1, Execution: 1}
}

// messages returns the "messages" of a recorded request body.
func messages(t *testing.T, r recorded) []map[string]any {
	t.Helper()
	raw, ok := r.Body["messages"].([]any)
	if !ok {
		t.Fatalf("request has no messages: %s", r.Raw)
	}
	out := make([]map[string]any, len(raw))
	for i, m := range raw {
		out[i] = m.(map[string]any)
	}
	return out
}

func storedMessages(t *testing.T, res *agent.Result) []Message {
	t.Helper()
	msgs, _, err := decodeMemory(res.Memory)
	if err != nil {
		t.Fatal(err)
	}
	return msgs
}

func mustContain(t *testing.T, s, sub string) {
	t.Helper()
	if !strings.Contains(s, sub) {
		t.Fatalf("%q does not contain %q", s, sub)
	}
}
