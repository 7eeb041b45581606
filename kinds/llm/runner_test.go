package llm

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/ensemble-run/ensemble/agent"
	"github.com/ensemble-run/ensemble/ensemble"
	"github.com/ensemble-run/ensemble/events"
	"github.com/ensemble-run/ensemble/internal/responses"
	askkind "github.com/ensemble-run/ensemble/kinds/ask"
)

func TestPlainReply(t *testing.T) {
	t.Parallel()
	srv := newFakeServer(t, scripted(oaText(`{"needs_clarification": false, "analysis": "EMEA grew"}`)))
	temp := 0.2
	p := openaiProfile(srv.URL)
	p.Temperature, p.MaxTokens, p.SystemPrompt = &temp, 256, "You are precise."
	e, a := newEnsemble(t, p, ensemble.Agent{Spec: &Spec{Prompt: "Analyze the data."},
		Dependencies: []*ensemble.Dependency{{AgentName: "extractor"}}})
	req := request(e, a, "Sales figures for Q3")
	req.Dependencies = map[string]any{"extractor": map[string]any{"region": "EMEA"}}
	req.Fresh = []string{"extractor"}

	res := newTestRunner(Options{}).Run(context.Background(), req)
	if res.Err != nil {
		t.Fatal(res.Err)
	}
	if res.StopReason != StopEndTurn {
		t.Errorf("stop reason %q", res.StopReason)
	}
	out, ok := res.Output.(map[string]any)
	if !ok || out["analysis"] != "EMEA grew" {
		t.Errorf("output %#v", res.Output)
	}
	if res.Usage.Requests != 1 || res.Usage.InputTokens != 10 || res.Usage.OutputTokens != 5 {
		t.Errorf("usage %+v", res.Usage)
	}
	reqs := srv.requests()
	if len(reqs) != 1 {
		t.Fatalf("%d requests", len(reqs))
	}
	r := reqs[0]
	if r.Path != "/chat/completions" {
		t.Errorf("path %s", r.Path)
	}
	if got := r.Header.Get("Authorization"); got != "Bearer "+testKey {
		t.Errorf("authorization %q", got)
	}
	if r.Body["model"] != "gpt-test" || r.Body["temperature"] != 0.2 || r.Body["max_tokens"] != float64(256) {
		t.Errorf("body %s", r.Raw)
	}
	if _, ok := r.Body["tool_choice"]; ok {
		t.Errorf("tool_choice sent: %s", r.Raw)
	}
	msgs := messages(t, r)
	if len(msgs) != 2 || msgs[0]["role"] != "system" || msgs[1]["role"] != "user" {
		t.Fatalf("messages %v", msgs)
	}
	if msgs[0]["content"] != "You are precise.\n\nAnalyze the data." {
		t.Errorf("system %q", msgs[0]["content"])
	}
	want := "Input:\nSales figures for Q3\n\nOutput of extractor:\n{\"region\":\"EMEA\"}"
	if msgs[1]["content"] != want {
		t.Errorf("user message %q, want %q", msgs[1]["content"], want)
	}
	stored := storedMessages(t, res)
	if len(stored) != 2 || stored[0].Role != RoleUser || stored[1].Role != RoleAssistant {
		t.Errorf("stored %+v", stored)
	}
	in, _ := res.InputData.([]Message)
	if len(in) != 3 || in[0].Role != RoleSystem {
		t.Errorf("input data %+v", res.InputData)
	}
}

func TestTextOutputAndJSONFormat(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name, format, reply string
		want                any
		wantErr             string
	}{
		{name: "plain text", reply: "  EMEA grew 12%  ", want: "EMEA grew 12%"},
		{name: "text that is JSON", reply: `[1, 2]`, want: []any{1.0, 2.0}},
		{name: "json", format: "json", reply: `{"a": 1}`, want: map[string]any{"a": 1.0}},
		{name: "json fenced", format: "json", reply: "Here you go:\n```json\n{\"a\": 2}\n```\nDone.", want: map[string]any{"a": 2.0}},
		{name: "json bare fence", format: "json", reply: "```\n[true]\n```", want: []any{true}},
		{name: "json invalid", format: "json", reply: "I think {a: 1}", wantErr: "output_format json"},
		{name: "json bad fence", format: "json", reply: "```json\n{a: 1}\n```", wantErr: "output_format json: the reply is not valid JSON"},
		// Nesting is capped, in text and json replies.
		{name: "text 512 levels", reply: deep(512), want: json.RawMessage(deep(512))},
		{name: "text 513 levels", reply: deep(513), wantErr: "output nests deeper than 512 levels"},
		{name: "json 512 levels", format: "json", reply: deep(512), want: json.RawMessage(deep(512))},
		{name: "json 513 levels", format: "json", reply: deep(513), wantErr: "output_format json: output nests deeper than 512 levels"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			srv := newFakeServer(t, scripted(oaText(tc.reply)))
			e, a := newEnsemble(t, openaiProfile(srv.URL), ensemble.Agent{Spec: &Spec{OutputFormat: tc.format}})
			res := newTestRunner(Options{}).Run(context.Background(), request(e, a, "x"))
			if tc.wantErr != "" {
				if res.Err == nil {
					t.Fatalf("no error, output %#v", res.Output)
				}
				mustContain(t, res.Err.Error(), tc.wantErr)
				if len(storedMessages(t, res)) != 2 {
					t.Errorf("the failed reply is not kept in the conversation")
				}
				return
			}
			if res.Err != nil {
				t.Fatal(res.Err)
			}
			gotJSON, _ := json.Marshal(res.Output)
			wantJSON, _ := json.Marshal(tc.want)
			if string(gotJSON) != string(wantJSON) {
				t.Errorf("output %s, want %s", gotJSON, wantJSON)
			}
		})
	}
}

// deep is a JSON array nesting n levels.
func deep(n int) string { return strings.Repeat("[", n) + strings.Repeat("]", n) }

func TestToolLoopTwoRounds(t *testing.T) {
	t.Parallel()
	srv := newFakeServer(t, scripted(
		oaCalls(call{"call_a", "echo", `{"region":"EMEA"}`}),
		oaCalls(call{"call_b", "echo", `{"region":"APAC"}`}),
		oaReply("stop", "EMEA and APAC done", 30, 9),
	))
	e, a := newEnsemble(t, openaiProfile(srv.URL), ensemble.Agent{}, echoTool)
	var log eventLog
	req := request(e, a, "go")
	req.Events = log.sink()
	res := newTestRunner(Options{}).Run(context.Background(), req)
	if res.Err != nil {
		t.Fatal(res.Err)
	}
	if res.Output != "EMEA and APAC done" || res.StopReason != StopEndTurn {
		t.Errorf("output %#v stop %s", res.Output, res.StopReason)
	}
	// usage summed over the three requests
	if res.Usage.Requests != 3 || res.Usage.InputTokens != 70 || res.Usage.OutputTokens != 23 {
		t.Errorf("usage %+v", res.Usage)
	}
	reqs := srv.requests()
	if len(reqs) != 3 {
		t.Fatalf("%d requests", len(reqs))
	}
	tools, _ := reqs[0].Body["tools"].([]any)
	if len(tools) != 1 {
		t.Fatalf("tools %s", reqs[0].Raw)
	}
	fn := tools[0].(map[string]any)["function"].(map[string]any)
	if fn["name"] != "echo" || fn["parameters"].(map[string]any)["required"].([]any)[0] != "region" {
		t.Errorf("tool %v", fn)
	}
	msgs := messages(t, reqs[2])
	// system, user, assistant(call_a), tool, assistant(call_b), tool
	if len(msgs) != 6 {
		t.Fatalf("third request has %d messages: %s", len(msgs), reqs[2].Raw)
	}
	if msgs[3]["role"] != "tool" || msgs[3]["tool_call_id"] != "call_a" || msgs[3]["content"] != `echo:{"region":"EMEA"}` {
		t.Errorf("first result %v", msgs[3])
	}
	if msgs[5]["tool_call_id"] != "call_b" || msgs[5]["content"] != `echo:{"region":"APAC"}` {
		t.Errorf("second result %v", msgs[5])
	}
	tc := msgs[2]["tool_calls"].([]any)[0].(map[string]any)
	if tc["id"] != "call_a" || tc["function"].(map[string]any)["arguments"] != `{"region":"EMEA"}` {
		t.Errorf("assistant tool call %v", tc)
	}
	// events
	var started, completed int
	for _, ev := range log.all() {
		switch ev.Type {
		case events.ToolCallStarted:
			started++
			if ev.Tool != "echo" || ev.ToolID == "" || ev.Arguments == "" {
				t.Errorf("started event %+v", ev)
			}
		case events.ToolCallCompleted:
			completed++
			if ev.Error != "" || ev.Output == nil {
				t.Errorf("completed event %+v", ev)
			}
		}
	}
	if started != 2 || completed != 2 {
		t.Errorf("%d started, %d completed events", started, completed)
	}
	stored := storedMessages(t, res)
	if len(stored) != 6 {
		t.Errorf("stored %d messages", len(stored))
	}
}

// TestParallelToolCallsKeepIssuedOrder: the first call cannot finish before
// the second has (see testdata/rendezvous.sh), so it only succeeds when both
// run at once, and it is always the slower one; its result still goes first.
func TestParallelToolCallsKeepIssuedOrder(t *testing.T) {
	t.Parallel()
	srv := newFakeServer(t, scripted(
		oaCalls(call{"slow", "rendezvous", `{"name": "slow", "after": "fast"}`}, call{"fast", "rendezvous", `{"name": "fast"}`}),
		oaText("done"),
	))
	e, a := newEnsemble(t, openaiProfile(srv.URL), ensemble.Agent{}, rendezvousTool)
	dir := t.TempDir()
	var log eventLog
	req := request(e, a, "go")
	req.Events = log.sink()
	res := newTestRunner(Options{Environ: func() []string {
		return []string{"PATH=/usr/local/bin:/usr/bin:/bin", "RENDEZVOUS_DIR=" + dir}
	}}).Run(context.Background(), req)
	if res.Err != nil {
		t.Fatal(res.Err)
	}
	msgs := messages(t, srv.requests()[1])
	if msgs[3]["tool_call_id"] != "slow" || msgs[4]["tool_call_id"] != "fast" {
		t.Errorf("results not in issued order: %v, %v", msgs[3], msgs[4])
	}
	if msgs[3]["content"] != "finished slow" || msgs[4]["content"] != "finished fast" {
		t.Errorf("the calls did not run concurrently: %v, %v", msgs[3]["content"], msgs[4]["content"])
	}
	// Completion events come in finishing order, which the scheduler decides
	// on a busy machine (the fast script's process may be reaped after the
	// slow one's): only check that both completed.
	var done []string
	for _, ev := range log.all() {
		if ev.Type == events.ToolCallCompleted {
			done = append(done, ev.ToolID)
		}
	}
	if len(done) != 2 {
		t.Errorf("completion events %v", done)
	}
}

func TestToolErrorsGoBackToTheModel(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name    string
		call    call
		wantErr string
	}{
		{"unknown tool", call{"c1", "launch_rockets", `{}`}, `unknown tool "launch_rockets"; available tools: echo, fail, sleep`},
		{"malformed arguments", call{"c1", "echo", `{"region": "EMEA"`}, `invalid arguments for tool "echo": not valid JSON`},
		{"schema violation: type", call{"c1", "echo", `{"region": 42}`}, `invalid arguments for tool "echo": at '/region'`},
		{"schema violation: required", call{"c1", "echo", `{}`}, `missing property 'region'`},
		{"arguments not an object", call{"c1", "echo", `[1]`}, `invalid arguments for tool "echo": not a JSON object`},
		{"arguments not an object, no schema", call{"c1", "fail", `"x"`}, `invalid arguments for tool "fail": not a JSON object`},
		{"tool failure", call{"c1", "fail", `{}`}, `tool "fail" failed: script exited with code 3: region database is down`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			srv := newFakeServer(t, scripted(oaCalls(tc.call), oaText("recovered")))
			e, a := newEnsemble(t, openaiProfile(srv.URL), ensemble.Agent{}, echoTool, failTool, sleepTool)
			var log eventLog
			req := request(e, a, "go")
			req.Events = log.sink()
			res := newTestRunner(Options{}).Run(context.Background(), req)
			if res.Err != nil {
				t.Fatal(res.Err)
			}
			if res.Output != "recovered" {
				t.Errorf("output %#v", res.Output)
			}
			reqs := srv.requests()
			if len(reqs) != 2 {
				t.Fatalf("%d requests", len(reqs))
			}
			msgs := messages(t, reqs[1])
			result := msgs[3]
			if result["role"] != "tool" || result["tool_call_id"] != "c1" {
				t.Fatalf("result %v", result)
			}
			content := result["content"].(string)
			if !strings.HasPrefix(content, "Error: ") {
				t.Errorf("error result not marked: %q", content)
			}
			mustContain(t, content, tc.wantErr)
			stored := storedMessages(t, res)
			if !stored[2].IsError {
				t.Errorf("stored result not is_error: %+v", stored[2])
			}
			var sawErr bool
			for _, ev := range log.all() {
				if ev.Type == events.ToolCallCompleted && ev.Error != "" {
					sawErr = true
				}
			}
			if !sawErr {
				t.Errorf("no tool_call_completed event with an error")
			}
			// An unknown tool is recorded by the name the model called.
			var calls []ToolCallRecord
			if _, err := res.Details.Decode(ToolCallsDetail, &calls); err != nil || len(calls) != 1 || calls[0] != (ToolCallRecord{Tool: tc.call.name, Failed: true}) {
				t.Errorf("tool_calls %+v (%v)", calls, err)
			}
		})
	}
}

func TestToolTimeout(t *testing.T) {
	t.Parallel()
	srv := newFakeServer(t, scripted(oaCalls(call{"c1", "sleep", `{"seconds": 30}`}), oaText("ok")))
	slow := *sleepTool
	slow.Timeout = 200 * time.Millisecond
	e, a := newEnsemble(t, openaiProfile(srv.URL), ensemble.Agent{}, &slow)
	res := newTestRunner(Options{}).Run(context.Background(), request(e, a, "go"))
	if res.Err != nil || res.Output != "ok" {
		t.Fatalf("err %v output %#v: the loop did not continue", res.Err, res.Output)
	}
	msgs := messages(t, srv.requests()[1])
	if msgs[3]["content"] != `Error: tool "sleep" timed out after 200ms` {
		t.Errorf("result %q", msgs[3]["content"])
	}
}

func TestToolEnvironmentHasNoKeys(t *testing.T) {
	t.Parallel()
	srv := newFakeServer(t, scripted(oaCalls(call{"c1", "env", `{}`}), oaText("ok")))
	e, a := newEnsemble(t, openaiProfile(srv.URL), ensemble.Agent{}, envTool)
	res := newTestRunner(Options{}).Run(context.Background(), request(e, a, "go"))
	if res.Err != nil {
		t.Fatal(res.Err)
	}
	out := messages(t, srv.requests()[1])[3]["content"].(string)
	names := strings.Fields(out)
	has := func(n string) bool {
		for _, x := range names {
			if x == n {
				return true
			}
		}
		return false
	}
	if has("TEST_OPENAI_KEY") {
		t.Errorf("the tool saw the api key variable: %v", names)
	}
	for _, n := range []string{"ENSEMBLE_AGENT", "ENSEMBLE_TOOL", "ENSEMBLE_TOOL_CALL_ID", "PATH"} {
		if !has(n) {
			t.Errorf("tool env lacks %s: %v", n, names)
		}
	}
}

func TestMaxSteps(t *testing.T) {
	t.Parallel()
	srv := newFakeServer(t, func(n int, _ recorded, w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, oaCalls(call{"c" + string(rune('a'+n)), "echo", `{"region":"x"}`}))
	})
	e, a := newEnsemble(t, openaiProfile(srv.URL), ensemble.Agent{Spec: &Spec{MaxSteps: 3}}, echoTool)
	res := newTestRunner(Options{}).Run(context.Background(), request(e, a, "go"))
	if res.Err == nil || res.StopReason != StopMaxSteps {
		t.Fatalf("err %v stop %q", res.Err, res.StopReason)
	}
	mustContain(t, res.Err.Error(), "max_steps (3) reached")
	if n := len(srv.requests()); n != 3 {
		t.Errorf("%d requests, want 3", n)
	}
	if res.Usage.Requests != 3 {
		t.Errorf("usage %+v", res.Usage)
	}
	stored := storedMessages(t, res)
	last := stored[len(stored)-1]
	if last.Role != RoleTool || !last.IsError || last.ToolCallID != "cc" {
		t.Errorf("last stored message %+v", last)
	}
	mustContain(t, last.Content, "not run: max_steps (3) reached")
	assertNoDanglingCalls(t, stored)
}

// assertNoDanglingCalls checks that every tool call has exactly one result
// right after its assistant message.
func assertNoDanglingCalls(t *testing.T, msgs []Message) {
	t.Helper()
	for i, m := range msgs {
		if m.Role != RoleAssistant || len(m.ToolCalls) == 0 {
			continue
		}
		for j, tc := range m.ToolCalls {
			k := i + 1 + j
			if k >= len(msgs) || msgs[k].Role != RoleTool || msgs[k].ToolCallID != tc.ID {
				t.Fatalf("tool call %s of message %d has no result in place: %+v", tc.ID, i, msgs)
			}
		}
	}
}

func TestFinishReasonStopWithToolCallsRunsTools(t *testing.T) {
	t.Parallel()
	// Ollama reports finish_reason "stop" on replies with tool calls.
	srv := newFakeServer(t, scripted(
		oaReply("stop", "", 5, 5, call{"c1", "echo", `{"region":"EMEA"}`}),
		oaText("done"),
	))
	e, a := newEnsemble(t, openaiProfile(srv.URL), ensemble.Agent{}, echoTool)
	res := newTestRunner(Options{}).Run(context.Background(), request(e, a, "go"))
	if res.Err != nil {
		t.Fatal(res.Err)
	}
	if len(srv.requests()) != 2 || res.Output != "done" {
		t.Fatalf("%d requests, output %#v", len(srv.requests()), res.Output)
	}
	mustContain(t, messages(t, srv.requests()[1])[3]["content"].(string), "echo:")
}

func TestLengthCutOffRunsNoTools(t *testing.T) {
	t.Parallel()
	srv := newFakeServer(t, scripted(
		oaReply("length", "The regions are", 5, 64, call{"c1", "echo", `{"regi`}),
	))
	p := openaiProfile(srv.URL)
	p.MaxTokens = 64
	e, a := newEnsemble(t, p, ensemble.Agent{}, echoTool)
	var log eventLog
	req := request(e, a, "go")
	req.Events = log.sink()
	res := newTestRunner(Options{}).Run(context.Background(), req)
	if res.StopReason != StopMaxTokens {
		t.Fatalf("stop %q err %v", res.StopReason, res.Err)
	}
	if res.Err != nil || res.Output != "The regions are" {
		t.Errorf("err %v output %#v", res.Err, res.Output)
	}
	if len(srv.requests()) != 1 {
		t.Errorf("%d requests", len(srv.requests()))
	}
	for _, ev := range log.all() {
		if ev.Type == events.ToolCallStarted {
			t.Errorf("a tool ran: %+v", ev)
		}
	}
	stored := storedMessages(t, res)
	if len(stored[1].ToolCalls) != 0 {
		t.Errorf("cut-off tool calls stored: %+v", stored[1])
	}

	// Cut off before any text: a failure.
	srv2 := newFakeServer(t, scripted(oaReply("length", "", 5, 64, call{"c1", "echo", `{"re`})))
	e2, a2 := newEnsemble(t, p, ensemble.Agent{}, echoTool)
	e2.Models["test"].BaseURL = srv2.URL
	res = newTestRunner(Options{}).Run(context.Background(), request(e2, a2, "go"))
	if res.Err == nil || res.StopReason != StopMaxTokens {
		t.Fatalf("err %v stop %q", res.Err, res.StopReason)
	}
	mustContain(t, res.Err.Error(), "cut off at max_tokens (64)")
	assertNoDanglingCalls(t, storedMessages(t, res))
}

func TestRefusal(t *testing.T) {
	t.Parallel()
	body := `{"id":"x","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,` +
		`"message":{"role":"assistant","content":null,"refusal":"I can't help with that."},"finish_reason":"stop"}],` +
		`"usage":{"prompt_tokens":3,"completion_tokens":4,"total_tokens":7}}`
	srv := newFakeServer(t, scripted(body))
	e, a := newEnsemble(t, openaiProfile(srv.URL), ensemble.Agent{})
	res := newTestRunner(Options{}).Run(context.Background(), request(e, a, "go"))
	if res.StopReason != StopRefusal || res.Err == nil {
		t.Fatalf("stop %q err %v", res.StopReason, res.Err)
	}
	mustContain(t, res.Err.Error(), "I can't help with that.")
	if res.Usage.Requests != 1 || res.Usage.OutputTokens != 4 {
		t.Errorf("usage %+v", res.Usage)
	}

	// a content filter stops the reply (and its tool calls) the same way
	srv = newFakeServer(t, scripted(oaReply("content_filter", "", 3, 1, call{"c1", "echo", `{"region":"x"}`})))
	e, a = newEnsemble(t, openaiProfile(srv.URL), ensemble.Agent{}, echoTool)
	res = newTestRunner(Options{}).Run(context.Background(), request(e, a, "go"))
	if res.StopReason != StopRefusal || res.Err == nil || len(srv.requests()) != 1 {
		t.Fatalf("stop %q err %v requests %d", res.StopReason, res.Err, len(srv.requests()))
	}
	mustContain(t, res.Err.Error(), "content filter")
	assertNoDanglingCalls(t, storedMessages(t, res))
}

func TestMemoryAcrossExecutions(t *testing.T) {
	t.Parallel()
	srv := newFakeServer(t, scripted(
		oaCalls(call{"c1", "echo", `{"region":"EMEA"}`}),
		oaText("first answer"),
		oaText("second answer"),
	))
	e, a := newEnsemble(t, openaiProfile(srv.URL), ensemble.Agent{Spec: &Spec{Prompt: "P"},
		Dependencies: []*ensemble.Dependency{{AgentName: "writer"}, {AgentName: "reviewer"}}}, echoTool)
	r := newTestRunner(Options{})

	req1 := request(e, a, "the input")
	req1.Dependencies = map[string]any{"writer": "draft 1"}
	req1.Fresh = []string{"writer"}
	res1 := r.Run(context.Background(), req1)
	if res1.Err != nil {
		t.Fatal(res1.Err)
	}
	// The engine stores Memory in the state, which may go through a file.
	memJSON, _ := json.Marshal(res1.Memory)

	req2 := request(e, a, "the input")
	req2.Execution = 2
	req2.Dependencies = map[string]any{"writer": "draft 1", "reviewer": map[string]any{"ok": false, "note": "too long"}}
	req2.Fresh = []string{"reviewer"}
	req2.RequestParameters = map[string]any{"focus": "EMEA"}
	req2.Memory = json.RawMessage(memJSON)
	res2 := r.Run(context.Background(), req2)
	if res2.Err != nil {
		t.Fatal(res2.Err)
	}
	if res2.Output != "second answer" {
		t.Errorf("output %#v", res2.Output)
	}
	reqs := srv.requests()
	first := messages(t, reqs[1]) // the complete first conversation as last sent
	second := messages(t, reqs[2])
	// system + 4 messages of execution 1 (user, call, result, answer) + new user
	if len(second) != 1+4+1 {
		t.Fatalf("second execution sent %d messages: %s", len(second), reqs[2].Raw)
	}
	for i := range first {
		a, _ := json.Marshal(first[i])
		b, _ := json.Marshal(second[i])
		if string(a) != string(b) {
			t.Errorf("message %d differs:\n%s\n%s", i, a, b)
		}
	}
	if second[4]["role"] != "assistant" || second[4]["content"] != "first answer" {
		t.Errorf("first answer not kept: %v", second[4])
	}
	want := "Output of reviewer:\n{\"note\":\"too long\",\"ok\":false}\n\nRequest parameters:\n{\"focus\":\"EMEA\"}"
	if second[5]["role"] != "user" || second[5]["content"] != want {
		t.Errorf("new user message %q, want %q", second[5]["content"], want)
	}
	stored := storedMessages(t, res2)
	if len(stored) != 6 {
		t.Errorf("stored %d messages", len(stored))
	}
	added, _ := res2.InputData.([]Message)
	if len(added) != 2 || added[0].Role != RoleUser || added[1].Content != "second answer" {
		t.Errorf("input data of execution 2: %+v", added)
	}
}

// TestCancellationMidRequest: cancelling while the server holds the request
// aborts it (the server sees the client go away; it never answers), with no
// retry, and the execution ends "cancelled".
func TestCancellationMidRequest(t *testing.T) {
	t.Parallel()
	for _, provider := range []string{"openai", "anthropic"} {
		t.Run(provider, func(t *testing.T) {
			t.Parallel()
			ctx, cancel := context.WithCancel(context.Background())
			aborted := make(chan struct{})
			srv := newFakeServer(t, func(_ int, _ recorded, w http.ResponseWriter, r *http.Request) {
				cancel() // the request is in flight
				select {
				case <-r.Context().Done():
					close(aborted)
				case <-time.After(30 * time.Second): // guard: fails the test below
				}
			})
			p := openaiProfile(srv.URL)
			if provider == "anthropic" {
				p = anthropicProfile(srv.URL)
			}
			e, a := newEnsemble(t, p, ensemble.Agent{})
			res := newTestRunner(Options{MaxRetries: 3}).Run(ctx, request(e, a, "go"))
			if res.StopReason != StopCancelled || res.Err == nil || res.Err.Error() != "cancelled" {
				t.Fatalf("stop %q err %v", res.StopReason, res.Err)
			}
			select {
			case <-aborted:
			case <-time.After(20 * time.Second):
				t.Fatal("the request was not aborted")
			}
			if n := len(srv.requests()); n != 1 {
				t.Errorf("%d requests (a cancelled request must not be retried)", n)
			}
			if stored := storedMessages(t, res); len(stored) != 1 || stored[0].Role != RoleUser {
				t.Errorf("stored %+v", stored)
			}
		})
	}
}

// TestCancellationDuringTools: cancelling while a tool runs kills it; the
// call finished before stays, the cut one gets an error result, no request
// follows.
func TestCancellationDuringTools(t *testing.T) {
	t.Parallel()
	srv := newFakeServer(t, scripted(oaCalls(call{"c1", "sleep", `{"seconds": 30}`}, call{"c2", "echo", `{"region":"x"}`}), oaText("never")))
	e, a := newEnsemble(t, openaiProfile(srv.URL), ensemble.Agent{}, sleepTool, echoTool)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	req := request(e, a, "go")
	req.Events = func(ev events.Event) {
		if ev.Type == events.ToolCallCompleted && ev.ToolID == "c2" {
			cancel() // c1 sleeps for 30 s
		}
	}
	res := newTestRunner(Options{}).Run(ctx, req)
	if res.StopReason != StopCancelled || res.Err == nil || res.Err.Error() != "cancelled" {
		t.Fatalf("stop %q err %v", res.StopReason, res.Err)
	}
	stored := storedMessages(t, res)
	assertNoDanglingCalls(t, stored)
	if len(stored) != 4 || !stored[2].IsError || stored[3].IsError || stored[3].Content != `echo:{"region":"x"}` {
		t.Fatalf("want the cancelled call an error and the finished one kept: %+v", stored)
	}
	mustContain(t, stored[2].Content, `tool "sleep" was`)
	mustContain(t, stored[2].Content, "cancelled")
	if len(srv.requests()) != 1 {
		t.Errorf("%d requests", len(srv.requests()))
	}
}

func TestAgentTimeout(t *testing.T) {
	t.Parallel()
	for _, byEngine := range []bool{false, true} {
		t.Run(map[bool]string{false: "runner", true: "engine"}[byEngine], func(t *testing.T) {
			t.Parallel()
			srv := newFakeServer(t, scripted(oaCalls(call{"c1", "sleep", `{"seconds": 30}`}), oaText("never")))
			agent := ensemble.Agent{}
			ctx := context.Background()
			var cause error
			if byEngine {
				cause = errors.New("agent timeout of 1.5s")
				var cancel context.CancelFunc
				ctx, cancel = context.WithTimeoutCause(ctx, 1500*time.Millisecond, cause)
				defer cancel()
			} else {
				agent.Timeout = 1500 * time.Millisecond
			}
			e, a := newEnsemble(t, openaiProfile(srv.URL), agent, sleepTool)
			res := newTestRunner(Options{}).Run(ctx, request(e, a, "go"))
			if res.StopReason != StopCancelled || res.Err == nil {
				t.Fatalf("stop %q err %v", res.StopReason, res.Err)
			}
			if res.Err.Error() != "cancelled: agent timeout of 1.5s" {
				t.Errorf("error %q", res.Err)
			}
			if byEngine && !errors.Is(res.Err, cause) {
				t.Errorf("the engine's cause is not wrapped (it would be repeated): %v", res.Err)
			}
			stored := storedMessages(t, res)
			assertNoDanglingCalls(t, stored)
			if len(stored) != 3 || !stored[2].IsError || stored[2].Content != `tool "sleep" was stopped: agent timeout of 1.5s` {
				t.Errorf("the tool's result does not name the agent's timeout: %+v", stored)
			}
		})
	}
}

func TestOllamaProvider(t *testing.T) {
	t.Parallel()
	srv := newFakeServer(t, scripted(
		oaReply("stop", "", 5, 5, call{"", "echo", `{"region":"EMEA"}`}, call{"", "echo", `{"region":"APAC"}`}),
		oaText("ok"),
	))
	p := ensemble.ModelProfile{Provider: "ollama", Model: "llama3.2", BaseURL: srv.URL + "/v1"}
	e, a := newEnsemble(t, p, ensemble.Agent{}, echoTool)
	res := newTestRunner(Options{LookupEnv: func(string) (string, bool) { return "", false }}).Run(context.Background(), request(e, a, "go"))
	if res.Err != nil {
		t.Fatal(res.Err)
	}
	reqs := srv.requests()
	if reqs[0].Path != "/v1/chat/completions" {
		t.Errorf("path %s", reqs[0].Path)
	}
	if h := reqs[0].Header.Get("Authorization"); h != "" {
		t.Errorf("authorization sent to ollama: %q", h)
	}
	for _, r := range reqs {
		if _, ok := r.Body["tool_choice"]; ok {
			t.Errorf("tool_choice sent to ollama")
		}
	}
	// calls without IDs got distinct ones, and each result points to its call
	msgs := messages(t, reqs[1])
	calls, ok := msgs[2]["tool_calls"].([]any)
	if !ok {
		t.Fatalf("no tool calls: %s", reqs[1].Raw)
	}
	id1 := calls[0].(map[string]any)["id"]
	id2 := calls[1].(map[string]any)["id"]
	if id1 == "" || id1 == id2 || msgs[3]["tool_call_id"] != id1 || msgs[4]["tool_call_id"] != id2 {
		t.Errorf("ids %v %v results %v %v", id1, id2, msgs[3]["tool_call_id"], msgs[4]["tool_call_id"])
	}
}

func TestOllamaErrorBody(t *testing.T) {
	t.Parallel()
	srv := newFakeServer(t, func(_ int, _ recorded, w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusNotFound)
		_, _ = io.WriteString(w, `{"error":"model \"llama9\" not found, try pulling it first"}`)
	})
	p := ensemble.ModelProfile{Provider: "ollama", Model: "llama9", BaseURL: srv.URL + "/v1"}
	e, a := newEnsemble(t, p, ensemble.Agent{})
	res := newTestRunner(Options{}).Run(context.Background(), request(e, a, "go"))
	if res.Err == nil || res.StopReason != StopError {
		t.Fatalf("err %v stop %q", res.Err, res.StopReason)
	}
	mustContain(t, res.Err.Error(), `ollama API error 404 Not Found: model "llama9" not found`)
}

func TestSimulate(t *testing.T) {
	t.Parallel()
	srv := newFakeServer(t, scripted(oaText("Q3 only, EMEA region"), oaText("Yes, go ahead")))
	e, _ := newEnsemble(t, openaiProfile(srv.URL), ensemble.Agent{Name: "analyzer"})
	user := &ensemble.Agent{Name: "user_clarification", Kind: askkind.Kind{}, Spec: &askkind.Spec{Question: "The analyzer needs clarification."},
		Dependencies: []*ensemble.Dependency{{AgentName: "analyzer"}}}
	e.Agents = append(e.Agents, user)
	e.Index()
	r := newTestRunner(Options{})
	req := &agent.Request{Ensemble: e, Agent: user, Input: "Sales", Turn: 2, Execution: 1,
		Dependencies: map[string]any{"analyzer": map[string]any{"question": "Which quarter?"}}, Fresh: []string{"analyzer"}}
	res := r.Simulate(context.Background(), req, "test", "You are a sales manager.")
	if res.Err != nil {
		t.Fatal(res.Err)
	}
	if res.Output != "Q3 only, EMEA region" {
		t.Errorf("output %#v", res.Output)
	}
	msgs := messages(t, srv.requests()[0])
	mustContain(t, msgs[0]["content"].(string), "You are a sales manager.")
	mustContain(t, msgs[1]["content"].(string), "The agents ask you:\nThe analyzer needs clarification.")
	mustContain(t, msgs[1]["content"].(string), `Output of analyzer:`+"\n"+`{"question":"Which quarter?"}`)
	if _, ok := srv.requests()[0].Body["tools"]; ok {
		t.Errorf("a simulated user got tools")
	}
	// the second execution continues the simulated user's conversation
	req.Memory, req.Execution = res.Memory, 2
	req.Dependencies = map[string]any{"analyzer": "Shall I include APAC?"}
	res = r.Simulate(context.Background(), req, "test", "You are a sales manager.")
	if res.Err != nil || res.Output != "Yes, go ahead" {
		t.Fatalf("err %v output %#v", res.Err, res.Output)
	}
	if n := len(messages(t, srv.requests()[1])); n != 4 {
		t.Errorf("second simulated request has %d messages", n)
	}
	if res := r.Simulate(context.Background(), req, "nope", "x"); res.Err == nil {
		t.Errorf("unknown profile accepted")
	}
}

func TestBadToolSchemaFailsBeforeAnyRequest(t *testing.T) {
	t.Parallel()
	srv := newFakeServer(t, scripted(oaText("x")))
	bad := &ensemble.Tool{Name: "bad", Script: "echo.sh", Parameters: map[string]any{"type": "object", "properties": map[string]any{"a": map[string]any{"type": "strng"}}}}
	e, a := newEnsemble(t, openaiProfile(srv.URL), ensemble.Agent{}, bad)
	res := newTestRunner(Options{}).Run(context.Background(), request(e, a, "go"))
	if res.Err == nil || len(srv.requests()) != 0 {
		t.Fatalf("err %v, %d requests", res.Err, len(srv.requests()))
	}
	mustContain(t, res.Err.Error(), `tool "bad": parameters is not a valid JSON Schema`)
}

func TestSchemaCompiledOncePerTool(t *testing.T) {
	t.Parallel()
	srv := newFakeServer(t, scripted(oaText("x")))
	e, a := newEnsemble(t, openaiProfile(srv.URL), ensemble.Agent{}, echoTool)
	r := newTestRunner(Options{})
	ts1, err := r.toolSet(nil, e, SpecOf(a).Tools)
	if err != nil {
		t.Fatal(err)
	}
	ts2, _ := r.toolSet(nil, e, SpecOf(a).Tools)
	if ts1.byName["echo"] != ts2.byName["echo"] || ts1.byName["echo"].schema == nil {
		t.Errorf("schema compiled twice")
	}
}

// TestSimulatedUserFromResponsesFile: an entry {simulate: {model_profile,
// prompt}} of a responses file answers for an ask agent with a model,
// through the injected runner as the CLI wires it.
func TestSimulatedUserFromResponsesFile(t *testing.T) {
	t.Parallel()
	srv := newFakeServer(t, scripted(oaText("Q3 only, EMEA region")))
	e, _ := newEnsemble(t, openaiProfile(srv.URL), ensemble.Agent{Name: "analyzer"})
	user := &ensemble.Agent{Name: "user_clarification", Kind: askkind.Kind{}, Spec: &askkind.Spec{Question: "The analyzer needs clarification."},
		Dependencies: []*ensemble.Dependency{{AgentName: "analyzer"}}}
	e.Agents = append(e.Agents, user)
	e.Index()
	resp, err := responses.ParseResponses("responses.yaml", []byte(
		"user_clarification: {simulate: {model_profile: test, prompt: \"You are a sales manager.\"}}\n"))
	if err != nil {
		t.Fatal(err)
	}
	models := newTestRunner(Options{})
	inj := responses.Injected(resp, models)
	inj.Simulate = models.Simulate
	res := inj.Run(context.Background(), &agent.Request{Ensemble: e, Agent: user, Input: "Sales", Turn: 2, Execution: 1,
		Dependencies: map[string]any{"analyzer": map[string]any{"question": "Which quarter?"}}, Fresh: []string{"analyzer"}})
	if res.Err != nil || res.Output != "Q3 only, EMEA region" || res.Usage.Requests != 1 {
		t.Fatalf("err %v output %#v usage %+v", res.Err, res.Output, res.Usage)
	}
	msgs := messages(t, srv.requests()[0])
	if len(msgs) != 2 || msgs[0]["role"] != "system" || msgs[0]["content"] != "You are a sales manager.\n\n"+simulateInstruction {
		t.Errorf("messages %v", msgs)
	}
	want := "The agents ask you:\nThe analyzer needs clarification.\n\nInput:\nSales\n\nOutput of analyzer:\n{\"question\":\"Which quarter?\"}"
	if msgs[1]["content"] != want {
		t.Errorf("user message %q, want %q", msgs[1]["content"], want)
	}
}

// TestCachesAreBounded: a long-lived runner (ensemble test, a library user)
// sees a new *ensemble.Tool and *ensemble.ModelProfile for every loaded
// ensemble; its caches of them must not grow without bound.
func TestCachesAreBounded(t *testing.T) {
	t.Parallel()
	r := newTestRunner(Options{})
	for range maxCachedTools + 10 {
		tool := *echoTool
		if ct, err := r.compiledTool(&tool, nil); err != nil || ct.schema == nil {
			t.Fatal(err)
		}
	}
	r.toolsMu.Lock()
	if n := len(r.tools); n > maxCachedTools {
		t.Errorf("%d compiled tools cached", n)
	}
	r.toolsMu.Unlock()
	for range maxProviders + 10 {
		p := openaiProfile("http://127.0.0.1:1")
		if _, err := r.provider(&p); err != nil {
			t.Fatal(err)
		}
	}
	r.provMu.Lock()
	defer r.provMu.Unlock()
	if n := len(r.providers); n > maxProviders {
		t.Errorf("%d providers cached", n)
	}
}
