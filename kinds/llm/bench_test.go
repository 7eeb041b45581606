package llm

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ensemble-run/ensemble/agent"
	"github.com/ensemble-run/ensemble/engine"
	"github.com/ensemble-run/ensemble/ensemble"
)

// cannedTransport answers every request at once with the same body: what
// is left of a request's time is the loop's own overhead (building the
// request, trimming, encoding the request and decoding the reply, memory encoding).
type cannedTransport struct{ body []byte }

func (c cannedTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.Body != nil {
		_, _ = io.Copy(io.Discard, r.Body)
		_ = r.Body.Close()
	}
	return &http.Response{
		StatusCode: 200, Status: "200 OK", Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header:        http.Header{"Content-Type": []string{"application/json"}},
		Body:          io.NopCloser(bytes.NewReader(c.body)),
		ContentLength: int64(len(c.body)),
		Request:       r,
	}, nil
}

// fiftyMessages is a stored conversation of 50 messages (~400 characters
// each), with some tool rounds.
func fiftyMessages() []Message {
	para := strings.Repeat("Revenue in the EMEA region grew by twelve percent. ", 8)
	var msgs []Message
	for len(msgs) < 50 {
		switch len(msgs) % 10 {
		case 2:
			msgs = append(msgs, Message{Role: RoleAssistant, ToolCalls: []ToolCall{{ID: fmt.Sprint("c", len(msgs)), Name: "echo", Arguments: `{"region":"EMEA"}`}}})
			msgs = append(msgs, Message{Role: RoleTool, ToolCallID: fmt.Sprint("c", len(msgs)-1), ToolName: "echo", Content: para})
		default:
			role := RoleUser
			if len(msgs)%2 == 1 {
				role = RoleAssistant
			}
			msgs = append(msgs, Message{Role: role, Content: para})
		}
	}
	return msgs[:50]
}

func benchLoop(b *testing.B, provider string, window *ensemble.ContextWindow) {
	body := oaText("EMEA grew 12%.")
	p := openaiProfile("http://model.invalid/v1")
	if provider == "anthropic" {
		body = anReply("end_turn", 10, 5, anText("EMEA grew 12%."))
		p = anthropicProfile("http://model.invalid")
	}
	e, a := newEnsemble(b, p, ensemble.Agent{Spec: &Spec{ContextWindow: window}}, echoTool)
	r := newTestRunner(Options{HTTPClient: &http.Client{Transport: cannedTransport{body: []byte(body)}}})
	mem := encodeMemory(fiftyMessages(), nil)
	req := &agent.Request{Ensemble: e, Agent: a, Input: "x", Turn: 1, Execution: 2, Memory: mem,
		Dependencies: map[string]any{"d": "new data"}, Fresh: []string{"d"}}
	// warm up: tokenizer vocabulary, schema compilation, connection
	if res := r.Run(context.Background(), req); res.Err != nil {
		b.Fatal(res.Err)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		res := r.Run(context.Background(), req)
		if res.Err != nil {
			b.Fatal(res.Err)
		}
	}
}

// BenchmarkLoopOverhead50Messages: one execution (one model request) that
// continues a 50-message conversation, the server answering at once.
// Budget: < 1 ms per model request.
func BenchmarkLoopOverhead50Messages(b *testing.B) {
	b.Run("openai", func(b *testing.B) { benchLoop(b, "openai", nil) })
	b.Run("anthropic", func(b *testing.B) { benchLoop(b, "anthropic", nil) })
	b.Run("openai+max_tokens_window", func(b *testing.B) {
		benchLoop(b, "openai", &ensemble.ContextWindow{MaxTokens: 3000})
	})
	b.Run("anthropic+max_tokens_window", func(b *testing.B) {
		benchLoop(b, "anthropic", &ensemble.ContextWindow{MaxTokens: 3000})
	})
}

// TestHundredAgentsConcurrently: the 100 LLM agents of one turn
// (parallel_agent_limit: 100) all reach the server together through the
// engine and the default HTTP client (no per-host connection cap serialises
// them). The server holds every request until all 100 are in flight, so the
// test fails if any cap applies. The time it takes at 200 ms latency is
// BenchmarkHundredAgents200msLatency.
func TestHundredAgentsConcurrently(t *testing.T) {
	var inFlight sync.WaitGroup
	inFlight.Add(100)
	all := make(chan struct{})
	go func() { inFlight.Wait(); close(all) }()
	srv := newFakeServer(t, func(_ int, _ recorded, w http.ResponseWriter, r *http.Request) {
		inFlight.Done()
		select {
		case <-all:
		case <-time.After(20 * time.Second):
			http.Error(w, "not all 100 requests arrived together", http.StatusBadRequest)
			return
		case <-r.Context().Done():
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, oaText("ok"))
	})
	runHundred(t, hundredAgents(t, srv.URL))
}

// hundredAgents is an ensemble of 100 independent LLM agents run in one
// turn with parallel_agent_limit: 100.
func hundredAgents(t testing.TB, url string) *ensemble.Ensemble {
	var b strings.Builder
	fmt.Fprintf(&b, "name: hundred\nmodels:\n  m: {provider: openai, model: gpt-test, base_url: %q, api_key_env: TEST_OPENAI_KEY}\nagents:\n", url)
	for i := range 100 {
		fmt.Fprintf(&b, "  - {name: agent-%d, model_profile: m, prompt: Answer.}\n", i)
	}
	b.WriteString("conversation_limits: {parallel_agent_limit: 100, max_total_turns: 1}\n")
	e, err := ensemble.LoadBytes(filepath.Join(t.TempDir(), "hundred.yaml"), []byte(b.String()), ensemble.LoadOptions{Kinds: testKinds, LookupEnv: testEnv})
	if err != nil {
		t.Fatal(err)
	}
	return e
}

func runHundred(t testing.TB, e *ensemble.Ensemble) {
	r := newTestRunner(Options{}) // the default HTTP client
	res := engine.New(e, "go", engine.Options{Runner: r}).Run(context.Background())
	if res.CompletionReason != engine.Completed || len(res.Errors) != 0 || res.TurnCount != 1 ||
		len(res.ConversationHistory) != 100 || res.Usage.Requests != 100 {
		t.Fatalf("reason %s, %d turns, %d executions, usage %+v, errors %v",
			res.CompletionReason, res.TurnCount, len(res.ConversationHistory), res.Usage, res.Errors)
	}
}

// BenchmarkHundredAgents200msLatency: 100 LLM agents in one turn
// (parallel_agent_limit: 100), run by the engine against a server with
// 200 ms latency. Budget: < 0.5 s per run (ns/op; also s/run).
func BenchmarkHundredAgents200msLatency(b *testing.B) {
	srv := newFakeServer(b, func(_ int, _ recorded, w http.ResponseWriter, _ *http.Request) {
		time.Sleep(200 * time.Millisecond)
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, oaText("ok"))
	})
	e := hundredAgents(b, srv.URL)
	start := time.Now()
	n := 0
	for b.Loop() {
		runHundred(b, e)
		n++
	}
	b.ReportMetric(time.Since(start).Seconds()/float64(n), "s/run")
}
