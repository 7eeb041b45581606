package inspector_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/ensemble-run/ensemble/durable"
	"github.com/ensemble-run/ensemble/inspector"
	"github.com/ensemble-run/ensemble/internal/browsertest"
	"github.com/ensemble-run/ensemble/session"
	"github.com/ensemble-run/ensemble/store"
)

const tracedEnsemble = `name: traced
input: "the input"
models:
  m:
    provider: openai
    model: gpt-test
    base_url: BASE
    api_key_env: TRACE_TEST_KEY
    temperature: 0.3
agents:
  - name: brief
    script: review.sh
  - name: writer
    model_profile: m
    prompt: "Be brief."
    dependencies:
      - brief
      - agent_name: reviewer
        requires_all: false
        condition: "context.reviewer?.approved != true"
    conversation: {max_turns: 2}
  - name: reviewer
    script: review.sh
    dependencies: [writer]
    conversation: {max_turns: 2}
`

// saveTracedRun runs an LLM agent twice (its second execution sends the
// first's conversation as memory) against a fake OpenAI server, saves the
// run in path, and returns its id and what the server received.
func saveTracedRun(t *testing.T, path string) (string, func() [][]any) {
	t.Helper()
	var mu sync.Mutex
	var bodies [][]any
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		raw, _ := io.ReadAll(r.Body)
		var b struct{ Messages []any }
		_ = json.Unmarshal(raw, &b)
		mu.Lock()
		bodies = append(bodies, b.Messages)
		n := len(bodies)
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		text := "draft one\nsecond line"
		if n > 1 {
			text = "draft two"
		}
		reply, _ := json.Marshal(map[string]any{"id": "x", "object": "chat.completion", "model": "gpt-test",
			"choices": []any{map[string]any{"index": 0, "finish_reason": "stop", "message": map[string]any{"role": "assistant", "content": text}}},
			"usage":   map[string]any{"prompt_tokens": 11, "completion_tokens": 3}})
		_, _ = w.Write(reply)
	}))
	t.Cleanup(srv.Close)
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "ensemble.yaml"), []byte(strings.Replace(tracedEnsemble, "BASE", srv.URL, 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "review.sh"), []byte("#!/bin/sh\ncat >/dev/null\necho '{\"approved\": false}'\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	env := func(k string) (string, bool) {
		if k == "TRACE_TEST_KEY" {
			return "sk-trace-test-key-0123456789", true
		}
		return "", false
	}
	e, err := session.Load(filepath.Join(dir, "ensemble.yaml"), nil, session.LoadOptions{LookupEnv: env})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	s, err := session.Open(ctx, e, session.Options{Suspend: true, NoInput: true, LookupEnv: env})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	d, err := durable.Create(path, "", durable.Refs{}, store.SyncNormal)
	if err != nil {
		t.Fatal(err)
	}
	r, err := s.Start("", session.RunOptions{Save: d, RunID: d.ID()})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.Run(ctx); err != nil {
		t.Fatal(err)
	}
	return d.ID(), func() [][]any { mu.Lock(); defer mu.Unlock(); return bodies }
}

// TestExecutionRequests: the API gives each model request of an execution
// with the whole message list it sent, the memory rebuilt from the
// reference the record keeps.
func TestExecutionRequests(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "runs.db")
	id, sent := saveTracedRun(t, path)
	srv, err := inspector.New(inspector.Options{DBs: []string{path}, Token: "tok", LookupEnv: noEnv})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(srv.Handler())
	t.Cleanup(func() { ts.Close(); srv.Close() })
	bodies := sent()
	if len(bodies) != 2 {
		t.Fatalf("the model got %d requests", len(bodies))
	}
	for n := 1; n <= 2; n++ {
		req, _ := http.NewRequest("GET", ts.URL+"/api/run/execution?db=0&id="+id+"&agent=writer&n="+string(rune('0'+n)), nil)
		req.Header.Set("X-Ensemble-Token", "tok")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		var ex struct {
			Requests []struct {
				Model       string            `json:"model"`
				Temperature float64           `json:"temperature"`
				Messages    []json.RawMessage `json:"messages"`
				Reply       json.RawMessage   `json:"reply"`
			} `json:"requests"`
		}
		err = json.NewDecoder(resp.Body).Decode(&ex)
		resp.Body.Close()
		if err != nil || resp.StatusCode != 200 || len(ex.Requests) != 1 {
			t.Fatalf("execution %d: %d %v %+v", n, resp.StatusCode, err, ex)
		}
		got := ex.Requests[0]
		if got.Model != "gpt-test" || got.Temperature != 0.3 {
			t.Errorf("execution %d: model %q temperature %v", n, got.Model, got.Temperature)
		}
		var have []map[string]any
		for _, m := range got.Messages {
			var x map[string]any
			_ = json.Unmarshal(m, &x)
			have = append(have, map[string]any{"role": x["role"], "content": x["content"]})
		}
		var want []map[string]any
		for _, m := range bodies[n-1] {
			x := m.(map[string]any)
			want = append(want, map[string]any{"role": x["role"], "content": x["content"]})
		}
		hb, _ := json.Marshal(have)
		wb, _ := json.Marshal(want)
		if string(hb) != string(wb) {
			t.Errorf("execution %d: rebuilt\n%s\nsent\n%s", n, hb, wb)
		}
	}
	if len(bodies[1]) != 4 { // system, the first user message and reply, the new user message
		t.Errorf("the second request sent %d messages", len(bodies[1]))
	}
}

// TestBrowserConversation: the second execution of an LLM agent shows its
// request as a conversation: the system prompt, the memory and the new
// message by role, text with its line breaks, the raw JSON folded.
func TestBrowserConversation(t *testing.T) {
	t.Parallel()
	b := browsertest.Shared(t)
	needPython(t)
	db := filepath.Join(t.TempDir(), "runs.db")
	id, _ := saveTracedRun(t, db)
	url := serve(t, db)
	ctx := b.Tab(t)
	do(t, ctx, "the run", chromedp.Navigate(url+"#/run/0/"+id), chromedp.WaitVisible(css(`[data-turn="4"]`)),
		chromedp.Click(css(`[data-execution="writer#2"]`)))
	conv := `#execution [data-field="conversation"] [data-request="1"]`
	do(t, ctx, "the conversation", chromedp.WaitVisible(css(conv)))
	roles, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](`[...document.querySelectorAll('`+conv+` > [data-role]')].map((m) => m.dataset.role)`))
	if err != nil || strings.Join(roles, ",") != "system,user,assistant,user" {
		t.Errorf("roles %v (%v), want system, user, assistant, user", roles, err)
	}
	if s := text(t, ctx, conv+` [data-role="system"] .msg-text`); s != "Be brief." {
		t.Errorf("system %q", s)
	}
	if s := text(t, ctx, conv+` > [data-role="assistant"] .msg-text`); s != "draft one\nsecond line" {
		t.Errorf("the memory's reply %q, want its line break kept", s)
	}
	if n, err := chromedp.Run(ctx, chromedp.Evaluate[int](`document.querySelectorAll('`+conv+` details[data-raw="1"]:not([open])').length`)); err != nil || n != 1 {
		t.Errorf("raw JSON folded: %d (%v)", n, err)
	}
}
