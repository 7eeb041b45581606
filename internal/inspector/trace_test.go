package inspector_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/ensemble-run/ensemble/durable"
	"github.com/ensemble-run/ensemble/internal/browsertest"
	"github.com/ensemble-run/ensemble/internal/fakemodel"
	"github.com/ensemble-run/ensemble/internal/inspector"
	"github.com/ensemble-run/ensemble/internal/llmtrace"
	"github.com/ensemble-run/ensemble/kinds/ask"
	"github.com/ensemble-run/ensemble/session"
	"github.com/ensemble-run/ensemble/state"
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
tools:
  - name: lookup
    description: Looks a word up.
    parameters:
      type: object
      properties:
        word: {type: string}
      required: [word]
    script: lookup.sh
agents:
  - name: brief
    script: review.sh
  - name: writer
    model_profile: m
    prompt: "Be brief."
    tools: [lookup]
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
	srv := fakemodel.New(t, func(r fakemodel.Request) fakemodel.Reply {
		switch r.N {
		case 0: // the first execution's tool loop: a call, then the draft
			return fakemodel.Reply{Calls: []fakemodel.Call{{ID: "call_1", Name: "lookup", Args: `{"word":"brief"}`}}}
		case 2:
			return fakemodel.Reply{Text: "draft two"}
		}
		return fakemodel.Reply{Text: "draft one\nsecond line"}
	}, fakemodel.WithUsage(11, 3))
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "ensemble.yaml"), []byte(strings.Replace(tracedEnsemble, "BASE", srv.Root(), 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "review.sh"), []byte("#!/bin/sh\ncat >/dev/null\necho '{\"approved\": false}'\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "lookup.sh"), []byte("#!/bin/sh\ncat >/dev/null\necho 'short: few words'\n"), 0o755); err != nil {
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
	s, err := session.Open(ctx, e, session.Options{Ask: ask.Options{Suspend: true, NoInput: true}, LookupEnv: env})
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
	return d.ID(), func() [][]any {
		var bodies [][]any
		for _, r := range srv.Requests() {
			msgs, _ := r.Body["messages"].([]any)
			bodies = append(bodies, msgs)
		}
		return bodies
	}
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
	if len(bodies) != 3 {
		t.Fatalf("the model got %d requests", len(bodies))
	}
	next := 0 // the next request the model got
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
		if err != nil || resp.StatusCode != 200 || len(ex.Requests) != 3-n {
			t.Fatalf("execution %d: %d %v %+v", n, resp.StatusCode, err, ex)
		}
		for _, got := range ex.Requests {
			if got.Model != "gpt-test" || got.Temperature != 0.3 {
				t.Errorf("execution %d: model %q temperature %v", n, got.Model, got.Temperature)
			}
			var have []map[string]any
			for _, m := range got.Messages {
				var x map[string]any
				_ = json.Unmarshal(m, &x)
				have = append(have, map[string]any{"role": x["role"], "content": x["content"], "call": x["tool_call_id"]})
			}
			var want []map[string]any
			for _, m := range bodies[next] {
				x := m.(map[string]any)
				if x["content"] == nil {
					x["content"] = nil // a reply with only tool calls: no text either way
				}
				want = append(want, map[string]any{"role": x["role"], "content": x["content"], "call": x["tool_call_id"]})
			}
			hb, _ := json.Marshal(have)
			wb, _ := json.Marshal(want)
			if string(hb) != string(wb) {
				t.Errorf("execution %d, request %d: rebuilt\n%s\nsent\n%s", n, next+1, hb, wb)
			}
			next++
		}
	}
	// system, the first execution's user message, call, result and draft, the new user message
	if len(bodies[2]) != 6 {
		t.Errorf("the second execution sent %d messages", len(bodies[2]))
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
	if err != nil || strings.Join(roles, ",") != "system,user,assistant,tool,assistant,user" {
		t.Errorf("roles %v (%v), want system, user, assistant (a call), tool, assistant, user", roles, err)
	}
	// The call and its result are folded, and open on a click.
	for _, sel := range []string{`[data-tool-call="call_1"]`, `[data-tool-result="call_1"]`} {
		if n, err := chromedp.Run(ctx, chromedp.Evaluate[int](`document.querySelectorAll('`+conv+` details`+sel+`:not([open])').length`)); err != nil || n != 1 {
			t.Errorf("%s folded: %d (%v)", sel, n, err)
		}
	}
	do(t, ctx, "opening the result", chromedp.Click(css(conv+` [data-tool-result="call_1"] summary`)))
	if s := text(t, ctx, conv+` [data-tool-result="call_1"] .msg-text`); !strings.Contains(s, "short: few words") {
		t.Errorf("the tool result %q", s)
	}
	if s := text(t, ctx, conv+` [data-role="system"] .msg-text`); s != "Be brief." {
		t.Errorf("system %q", s)
	}
	if s, err := chromedp.Run(ctx, chromedp.Evaluate[string](`[...document.querySelectorAll('`+conv+` > [data-role="assistant"] > .msg-text')].map((e) => e.innerText).join("|")`)); err != nil || s != "draft one\nsecond line" {
		t.Errorf("the memory's reply %q, want its line break kept", s)
	}
	if n, err := chromedp.Run(ctx, chromedp.Evaluate[int](`document.querySelectorAll('`+conv+` details[data-raw="1"]:not([open])').length`)); err != nil || n != 1 {
		t.Errorf("raw JSON folded: %d (%v)", n, err)
	}
	// The first execution's second request: what the first sent is folded,
	// the call and its result follow.
	second := `#execution [data-field="conversation"] [data-request="2"]`
	do(t, ctx, "the first execution", chromedp.Click(css(`[data-execution="writer#1"]`)), chromedp.WaitVisible(css(second)))
	roles, err = chromedp.Run(ctx, chromedp.Evaluate[[]string](`[...document.querySelectorAll('`+second+` > [data-role]')].map((m) => m.dataset.role)`))
	if err != nil || strings.Join(roles, ",") != "assistant,tool" {
		t.Errorf("the second request shows %v (%v), want the call and its result", roles, err)
	}
	do(t, ctx, "the earlier messages", chromedp.Click(css(second+` details[data-earlier="2"] summary`)),
		chromedp.WaitVisible(css(second+` details[data-earlier="2"] [data-role="system"]`)))
}

// TestPageKnowsTheRecordKeys: the execution panel lists every key of a
// record it shows in a section of its own (the fields every record has,
// a child run, the model requests); any other key is a detail, shown
// under "Details". A field added to records without the page knowing it
// would show twice. The page's list of the fields' keys is the one
// declared list, state.RecordKeys, and the page has no other copy.
func TestPageKnowsTheRecordKeys(t *testing.T) {
	t.Parallel()
	src, err := os.ReadFile(filepath.Join("web", "app.js"))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`const RECORD_KEYS = (\[[^\]]*\]);`).FindSubmatch(src)
	if m == nil {
		t.Fatal("app.js declares no RECORD_KEYS")
	}
	var fields []string
	if err := json.Unmarshal(m[1], &fields); err != nil {
		t.Fatalf("RECORD_KEYS is not a list of strings: %v", err)
	}
	if !slices.Equal(fields, state.RecordKeys()) {
		t.Errorf("app.js's RECORD_KEYS %q, the records' keys %q", fields, state.RecordKeys())
	}
	if n := strings.Count(string(src), `"execution_time"`); n != 1 {
		t.Errorf("app.js lists a record's keys %d times, want once (RECORD_KEYS)", n)
	}
	m = regexp.MustCompile(`const known = new Set\(\[\.\.\.RECORD_KEYS, ([^\]]*)\]\)`).FindSubmatch(src)
	if m == nil {
		t.Fatal("app.js's known keys are not RECORD_KEYS and the details it shows")
	}
	known := map[string]bool{}
	for _, k := range fields {
		known[k] = true
	}
	for _, k := range strings.Split(string(m[1]), ",") {
		known[strings.Trim(strings.TrimSpace(k), `"`)] = true
	}
	one, s := 1, "x"
	rec := &state.Record{Instance: &one, Of: "x", Skipped: true, Error: &s, Stderr: "x", StopReason: &s,
		Usage: &state.Usage{}, Handles: []state.ExecutionRef{{}}}
	_ = rec.Details.Put(state.ChildDetail, map[string]any{})
	_ = rec.Details.Put(llmtrace.Detail, llmtrace.Trace{})
	b, err := json.Marshal(rec)
	if err != nil {
		t.Fatal(err)
	}
	var keys map[string]json.RawMessage
	if err := json.Unmarshal(b, &keys); err != nil {
		t.Fatal(err)
	}
	for k := range keys {
		if !known[k] {
			t.Errorf("the page does not know the record key %q", k)
		}
	}
}
