package llm

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ensemble-run/ensemble/ensemble"
)

// TestRetriesHonourRetryAfter: 500, then 429 with Retry-After: 2, then
// success, with both providers. The backoff before a second retry
// is at most 1 s, so a wait of 2 s or more can only come from the header.
// (Only lower bounds: how fast a machine is never fails the test.)
func TestRetriesHonourRetryAfter(t *testing.T) {
	t.Parallel()
	for _, provider := range []string{"openai", "anthropic"} {
		t.Run(provider, func(t *testing.T) {
			t.Parallel()
			var mu sync.Mutex
			var times []time.Time
			srv := newFakeServer(t, func(n int, _ recorded, w http.ResponseWriter, _ *http.Request) {
				mu.Lock()
				times = append(times, time.Now())
				mu.Unlock()
				w.Header().Set("Content-Type", "application/json")
				switch {
				case n == 0 && provider == "openai":
					w.WriteHeader(http.StatusInternalServerError)
					_, _ = io.WriteString(w, `{"error":{"message":"The server had an error while processing your request.","type":"server_error"}}`)
				case n == 0:
					w.WriteHeader(http.StatusInternalServerError)
					_, _ = io.WriteString(w, `{"type":"error","error":{"type":"api_error","message":"Internal server error"}}`)
				case n == 1 && provider == "openai":
					w.Header().Set("Retry-After", "2")
					w.WriteHeader(http.StatusTooManyRequests)
					_, _ = io.WriteString(w, `{"error":{"message":"Rate limit reached for gpt-test on requests per min (RPM): Limit 3, Used 3.","type":"requests","code":"rate_limit_exceeded"}}`)
				case n == 1:
					w.Header().Set("Retry-After", "2")
					w.WriteHeader(http.StatusTooManyRequests)
					_, _ = io.WriteString(w, `{"type":"error","error":{"type":"rate_limit_error","message":"This request would exceed your rate limit."}}`)
				case provider == "openai":
					_, _ = io.WriteString(w, oaText("finally"))
				default:
					_, _ = io.WriteString(w, anReply("end_turn", 3, 2, anText("finally")))
				}
			})
			p := openaiProfile(srv.URL)
			if provider == "anthropic" {
				p = anthropicProfile(srv.URL)
			}
			e, a := newEnsemble(t, p, ensemble.Agent{})
			res := newTestRunner(Options{MaxRetries: 3}).Run(context.Background(), request(e, a, "go"))
			if res.Err != nil {
				t.Fatal(res.Err)
			}
			if res.Output != "finally" || res.StopReason != StopEndTurn {
				t.Errorf("output %#v stop %q", res.Output, res.StopReason)
			}
			if n := len(srv.requests()); n != 3 {
				t.Fatalf("%d requests, want 3", n)
			}
			mu.Lock()
			defer mu.Unlock()
			if d := times[1].Sub(times[0]); d < 300*time.Millisecond {
				t.Errorf("the 500 was retried after %s: no backoff", d)
			}
			if d := times[2].Sub(times[1]); d < 2*time.Second {
				t.Errorf("Retry-After: 2 not honoured: retried after %s", d)
			}
			if res.Usage.Requests != 1 {
				t.Errorf("usage counts retries: %+v", res.Usage)
			}
		})
	}
}

func TestClientErrorsFailFast(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name, provider string
		status         int
		body           string
		want           string
	}{
		{"openai 401", "openai", 401,
			`{"error":{"message":"Incorrect API key provided: ` + testKey + `. You can find your API key at https://platform.openai.com/account/api-keys.","type":"invalid_request_error","code":"invalid_api_key"}}`,
			"openai API error 401 Unauthorized (invalid_api_key): Incorrect API key provided: [REDACTED]"},
		{"openai 400", "openai", 400,
			`{"error":{"message":"Invalid value for 'temperature'","type":"invalid_request_error","param":"temperature","code":null}}`,
			"openai API error 400 Bad Request (invalid_request_error): Invalid value for 'temperature'"},
		{"openai 403", "openai", 403, `{"error":{"message":"Project does not have access to model","type":"invalid_request_error"}}`,
			"403 Forbidden"},
		{"openai quota 429", "openai", 429,
			`{"error":{"message":"You exceeded your current quota, please check your plan and billing details.","type":"insufficient_quota","code":"insufficient_quota"}}`,
			"openai API error 429 Too Many Requests (insufficient_quota): You exceeded your current quota"},
		{"anthropic 401", "anthropic", 401,
			`{"type":"error","error":{"type":"authentication_error","message":"invalid x-api-key"}}`,
			"anthropic API error 401 Unauthorized (authentication_error): invalid x-api-key"},
		{"anthropic credit 400", "anthropic", 400,
			`{"type":"error","error":{"type":"invalid_request_error","message":"Your credit balance is too low to access the Anthropic API."}}`,
			"credit balance is too low"},
		{"anthropic usage limits 400", "anthropic", 400,
			`{"type":"error","error":{"type":"invalid_request_error","message":"You have reached your specified API usage limits. You will regain access on 2026-02-01 at 00:00 UTC."}}`,
			"anthropic API error 400 Bad Request (invalid_request_error): You have reached your specified API usage limits"},
		{"anthropic 403", "anthropic", 403,
			`{"type":"error","error":{"type":"permission_error","message":"Your API key does not have permission to use the specified resource."}}`,
			"anthropic API error 403 Forbidden (permission_error): Your API key does not have permission"},
		{"anthropic billing 402", "anthropic", 402,
			`{"type":"error","error":{"type":"billing_error","message":"Billing issue: please check your payment method."}}`,
			"anthropic API error 402 Payment Required (billing_error): Billing issue"},
		{"openrouter credits 402", "openai", 402,
			`{"error":{"message":"Insufficient credits. Add more using https://openrouter.ai/settings/credits","code":402}}`,
			"openai API error 402 Payment Required: Insufficient credits"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			srv := newFakeServer(t, func(_ int, _ recorded, w http.ResponseWriter, _ *http.Request) {
				w.Header().Set("Content-Type", "application/json")
				w.Header().Set("Retry-After", "0")
				w.WriteHeader(tc.status)
				_, _ = io.WriteString(w, tc.body)
			})
			p := openaiProfile(srv.URL)
			if tc.provider == "anthropic" {
				p = anthropicProfile(srv.URL)
			}
			e, a := newEnsemble(t, p, ensemble.Agent{})
			var log eventLog
			req := request(e, a, "go")
			req.Events = log.sink()
			res := newTestRunner(Options{MaxRetries: 3}).Run(context.Background(), req)
			if res.Err == nil || res.StopReason != StopError {
				t.Fatalf("err %v stop %q", res.Err, res.StopReason)
			}
			if n := len(srv.requests()); n != 1 {
				t.Errorf("%d requests, want exactly 1 (no retries)", n)
			}
			mustContain(t, res.Err.Error(), tc.want)
			assertNoKey(t, res.Err.Error(), res.Memory, res.InputData, log.all())
		})
	}
}

// assertNoKey checks that the test key appears nowhere in what a run keeps.
func assertNoKey(t *testing.T, things ...any) {
	t.Helper()
	for _, x := range things {
		b, _ := json.Marshal(x)
		s := fmt.Sprintf("%v %s", x, b)
		if strings.Contains(s, testKey) || strings.Contains(s, testKey[:12]) {
			t.Errorf("the key leaked: %s", s)
		}
	}
}

func TestMissingKeyFailsBeforeAnyRequest(t *testing.T) {
	t.Parallel()
	srv := newFakeServer(t, scripted(oaText("x")))
	cases := []struct {
		name string
		p    ensemble.ModelProfile
		want string
	}{
		{"openai", ensemble.ModelProfile{Name: "x", Provider: "openai", Model: "m", APIKeyEnv: "OPENAI_API_KEY"},
			`model profile "x": environment variable OPENAI_API_KEY is not set`},
		{"openai with base_url", ensemble.ModelProfile{Name: "x", Provider: "openai", Model: "m", BaseURL: srv.URL, APIKeyEnv: "OPENAI_API_KEY"},
			`model profile "x": environment variable OPENAI_API_KEY is not set`},
		{"anthropic", ensemble.ModelProfile{Name: "x", Provider: "anthropic", Model: "m", APIKeyEnv: "ANTHROPIC_API_KEY"},
			`model profile "x": environment variable ANTHROPIC_API_KEY is not set`},
		{"anthropic without api_key_env", ensemble.ModelProfile{Name: "x", Provider: "anthropic", Model: "m"},
			`model profile "x": provider anthropic needs api_key_env`},
		{"openai without key or base_url", ensemble.ModelProfile{Name: "x", Provider: "openai", Model: "m"},
			`model profile "x": provider openai needs api_key_env`},
		{"unknown provider", ensemble.ModelProfile{Name: "x", Provider: "gemini", Model: "m"},
			`unknown provider "gemini"`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e, a := newEnsemble(t, tc.p, ensemble.Agent{})
			// The real process environment is never consulted.
			r := newTestRunner(Options{LookupEnv: func(n string) (string, bool) {
				if n == "OPENAI_API_KEY" || n == "ANTHROPIC_API_KEY" {
					return "", true // set but empty counts as missing
				}
				return "", false
			}})
			res := r.Run(context.Background(), request(e, a, "go"))
			if res.Err == nil || res.StopReason != StopError {
				t.Fatalf("err %v stop %q", res.Err, res.StopReason)
			}
			if res.Err.Error() != tc.want && !strings.Contains(res.Err.Error(), tc.want) {
				t.Errorf("error %q, want %q", res.Err, tc.want)
			}
			if res.Memory != nil {
				t.Errorf("memory changed by a failure before any request")
			}
		})
	}
	if n := len(srv.requests()); n != 0 {
		t.Errorf("%d requests", n)
	}
}

func TestOpenAIBaseURLWithoutKey(t *testing.T) {
	t.Parallel()
	srv := newFakeServer(t, scripted(oaText("hi")))
	p := ensemble.ModelProfile{Provider: "openai", Model: "local", BaseURL: srv.URL}
	e, a := newEnsemble(t, p, ensemble.Agent{})
	res := newTestRunner(Options{}).Run(context.Background(), request(e, a, "go"))
	if res.Err != nil {
		t.Fatal(res.Err)
	}
	if h := srv.requests()[0].Header.Get("Authorization"); h != "" {
		t.Errorf("authorization %q", h)
	}
}

// OpenAI itself gets max_completion_tokens (its reasoning models reject
// max_tokens), also when base_url names it (base_url: ${OPENAI_BASE_URL});
// compatible servers and Ollama get max_tokens, which they all know.
func TestOpenAIMaxTokensField(t *testing.T) {
	t.Parallel()
	cases := []struct {
		provider, baseURL, want string
	}{
		{"openai", "", "max_completion_tokens"},
		{"openai", "https://api.openai.com/v1", "max_completion_tokens"},
		{"openai", "https://api.openai.com/v1/", "max_completion_tokens"},
		{"openai", "http://localhost:8000/v1", "max_tokens"},
		{"openai", "https://openrouter.ai/api/v1", "max_tokens"},
		{"ollama", DefaultOllamaBaseURL, "max_tokens"},
	}
	for _, tc := range cases {
		p := &ensemble.ModelProfile{Name: "x", Provider: tc.provider, Model: "gpt-5", MaxTokens: 100}
		prov := newOpenAI(providerConfig{profile: p, baseURL: tc.baseURL, httpClient: http.DefaultClient})
		b, _ := json.Marshal(prov.params(&ChatRequest{Messages: []Message{{Role: RoleUser, Content: "x"}}}))
		var body map[string]any
		_ = json.Unmarshal(b, &body)
		other := map[string]string{"max_tokens": "max_completion_tokens", "max_completion_tokens": "max_tokens"}[tc.want]
		if body[tc.want] != 100.0 || body[other] != nil {
			t.Errorf("%s %q: body %s, want %s", tc.provider, tc.baseURL, b, tc.want)
		}
	}
}

func TestAnthropicToolRoundTrip(t *testing.T) {
	t.Parallel()
	srv := newFakeServer(t, scripted(
		anReply("tool_use", 10, 4, anText("Let me look."),
			anToolUse("toolu_1", "echo", map[string]any{"region": "EMEA"}),
			anToolUse("toolu_2", "fail", map[string]any{})),
		anReply("end_turn", 30, 6, anText("EMEA is fine; the database is down.")),
	))
	temp := 0.5
	p := anthropicProfile(srv.URL)
	p.SystemPrompt, p.Temperature = "Be brief.", &temp
	e, a := newEnsemble(t, p, ensemble.Agent{Spec: &Spec{Prompt: "Check the regions."}}, echoTool, failTool)
	res := newTestRunner(Options{}).Run(context.Background(), request(e, a, "go"))
	if res.Err != nil {
		t.Fatal(res.Err)
	}
	if res.Output != "EMEA is fine; the database is down." || res.StopReason != StopEndTurn {
		t.Errorf("output %#v stop %s", res.Output, res.StopReason)
	}
	if res.Usage.Requests != 2 || res.Usage.InputTokens != 40 || res.Usage.OutputTokens != 10 {
		t.Errorf("usage %+v", res.Usage)
	}
	reqs := srv.requests()
	r0 := reqs[0]
	if r0.Path != "/v1/messages" || r0.Header.Get("X-Api-Key") != testKey || r0.Header.Get("Anthropic-Version") == "" {
		t.Errorf("path %s headers %v", r0.Path, r0.Header)
	}
	sys := r0.Body["system"].([]any)[0].(map[string]any)["text"]
	if sys != "Be brief.\n\nCheck the regions." || r0.Body["temperature"] != 0.5 || r0.Body["max_tokens"] != float64(DefaultAnthropicMaxTokens) {
		t.Errorf("body %s", r0.Raw)
	}
	tool := r0.Body["tools"].([]any)[0].(map[string]any)
	schema := tool["input_schema"].(map[string]any)
	if tool["name"] != "echo" || schema["type"] != "object" || schema["required"].([]any)[0] != "region" {
		t.Errorf("tool %v", tool)
	}
	msgs := messages(t, reqs[1])
	if len(msgs) != 3 {
		t.Fatalf("second request: %s", reqs[1].Raw)
	}
	asst := msgs[1]["content"].([]any)
	if msgs[1]["role"] != "assistant" || len(asst) != 3 || asst[1].(map[string]any)["type"] != "tool_use" ||
		asst[1].(map[string]any)["input"].(map[string]any)["region"] != "EMEA" {
		t.Errorf("assistant message %v", msgs[1])
	}
	results := msgs[2]["content"].([]any)
	if msgs[2]["role"] != "user" || len(results) != 2 {
		t.Fatalf("results message %v", msgs[2])
	}
	ok := results[0].(map[string]any)
	bad := results[1].(map[string]any)
	if ok["type"] != "tool_result" || ok["tool_use_id"] != "toolu_1" || ok["is_error"] != false {
		t.Errorf("ok result %v", ok)
	}
	if bad["tool_use_id"] != "toolu_2" || bad["is_error"] != true {
		t.Errorf("error result %v", bad)
	}
	text := bad["content"].([]any)[0].(map[string]any)["text"].(string)
	mustContain(t, text, "region database is down")
	if strings.HasPrefix(text, "Error: ") {
		t.Errorf("anthropic error results carry is_error, not a prefix: %q", text)
	}
}

func TestAnthropicStopReasons(t *testing.T) {
	t.Parallel()
	cases := []struct {
		stop, want string
		err        bool
	}{
		{"max_tokens", StopMaxTokens, false},
		{"refusal", StopRefusal, true},
		{"stop_sequence", StopEndTurn, false},
	}
	for _, tc := range cases {
		t.Run(tc.stop, func(t *testing.T) {
			t.Parallel()
			srv := newFakeServer(t, scripted(anReply(tc.stop, 1, 1, anText("partial"), anToolUse("toolu_1", "echo", map[string]any{"region": "x"})),
				anReply("end_turn", 1, 1, anText("done"))))
			e, a := newEnsemble(t, anthropicProfile(srv.URL), ensemble.Agent{}, echoTool)
			res := newTestRunner(Options{}).Run(context.Background(), request(e, a, "go"))
			if tc.stop == "stop_sequence" {
				// a reply with tool calls runs them whatever the stop reason
				if len(srv.requests()) != 2 {
					t.Errorf("%d requests", len(srv.requests()))
				}
				return
			}
			if res.StopReason != tc.want || (res.Err != nil) != tc.err {
				t.Errorf("stop %q err %v", res.StopReason, res.Err)
			}
			if len(srv.requests()) != 1 {
				t.Errorf("tools ran after %s", tc.stop)
			}
			assertNoDanglingCalls(t, storedMessages(t, res))
		})
	}
}

func TestAnthropicMessagesMerge(t *testing.T) {
	t.Parallel()
	msgs := anthropicMessages([]Message{
		{Role: RoleAssistant, Content: "earlier answer"},
		{Role: RoleUser, Content: "a"},
		{Role: RoleAssistant, ToolCalls: []ToolCall{{ID: "t1", Name: "x", Arguments: "not json"}}},
		{Role: RoleTool, ToolCallID: "t1", Content: ""},
		{Role: RoleUser, Content: "b"},
	})
	b, _ := json.Marshal(msgs)
	s := string(b)
	// starts with a user note; the tool result and the next user text share a message
	if len(msgs) != 5 || msgs[0].Role != "user" || msgs[4].Role != "user" || len(msgs[4].Content) != 2 {
		t.Fatalf("messages %s", s)
	}
	mustContain(t, s, `"input":{}`)
	mustContain(t, s, `(no output)`)
}

func TestStreaming(t *testing.T) {
	t.Parallel()
	oaSSE := func(w http.ResponseWriter, chunks ...string) {
		w.Header().Set("Content-Type", "text/event-stream")
		for _, c := range chunks {
			fmt.Fprintf(w, "data: %s\n\n", c)
			w.(http.Flusher).Flush()
		}
		fmt.Fprint(w, "data: [DONE]\n\n")
	}
	chunk := func(delta string, finish any) string {
		b, _ := json.Marshal(map[string]any{"id": "c1", "object": "chat.completion.chunk", "created": 1, "model": "m",
			"choices": []any{map[string]any{"index": 0, "delta": json.RawMessage(delta), "finish_reason": finish}}})
		return string(b)
	}
	usage := `{"id":"c1","object":"chat.completion.chunk","created":1,"model":"m","choices":[],"usage":{"prompt_tokens":11,"completion_tokens":3,"total_tokens":14}}`
	t.Run("openai", func(t *testing.T) {
		t.Parallel()
		srv := newFakeServer(t, func(n int, _ recorded, w http.ResponseWriter, _ *http.Request) {
			if n == 0 {
				oaSSE(w,
					chunk(`{"role":"assistant","tool_calls":[{"index":0,"id":"call_1","type":"function","function":{"name":"echo","arguments":""}}]}`, nil),
					chunk(`{"tool_calls":[{"index":0,"function":{"arguments":"{\"region\":"}}]}`, nil),
					chunk(`{"tool_calls":[{"index":0,"function":{"arguments":"\"EMEA\"}"}}]}`, nil),
					chunk(`{}`, "tool_calls"), usage)
				return
			}
			oaSSE(w, chunk(`{"role":"assistant","content":"EM"}`, nil), chunk(`{"content":"EA ok"}`, nil), chunk(`{}`, "stop"), usage)
		})
		e, a := newEnsemble(t, openaiProfile(srv.URL), ensemble.Agent{}, echoTool)
		var log eventLog
		req := request(e, a, "go")
		req.Events = log.sink()
		res := newTestRunner(Options{Stream: true}).Run(context.Background(), req)
		if res.Err != nil {
			t.Fatal(res.Err)
		}
		if res.Output != "EMEA ok" || res.Usage.Requests != 2 || res.Usage.InputTokens != 22 || res.Usage.OutputTokens != 6 {
			t.Errorf("output %#v usage %+v", res.Output, res.Usage)
		}
		reqs := srv.requests()
		if reqs[0].Body["stream"] != true {
			t.Errorf("not streamed: %s", reqs[0].Raw)
		}
		mustContain(t, messages(t, reqs[1])[3]["content"].(string), `echo:{"region":"EMEA"}`)
		deltas := log.deltas()
		// Deltas may be merged: the runner holds back the tail of the text
		// that could begin a key (see TestStreamRedaction).
		if strings.Join(deltas, "") != "EMEA ok" {
			t.Errorf("deltas %q", deltas)
		}
		assertNoKey(t, res, log.all())
	})
	t.Run("anthropic", func(t *testing.T) {
		t.Parallel()
		srv := newFakeServer(t, func(n int, _ recorded, w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Type", "text/event-stream")
			ev := func(name, data string) {
				fmt.Fprintf(w, "event: %s\ndata: %s\n\n", name, data)
				w.(http.Flusher).Flush()
			}
			ev("message_start", `{"type":"message_start","message":{"id":"msg_1","type":"message","role":"assistant","model":"claude-test","content":[],"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":9,"output_tokens":1}}}`)
			if n == 0 { // a tool_use block streamed as input_json_delta
				ev("content_block_start", `{"type":"content_block_start","index":0,"content_block":{"type":"tool_use","id":"toolu_1","name":"echo","input":{}}}`)
				ev("content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"input_json_delta","partial_json":"{\"region\":"}}`)
				ev("content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"input_json_delta","partial_json":"\"EMEA\"}"}}`)
				ev("content_block_stop", `{"type":"content_block_stop","index":0}`)
				ev("message_delta", `{"type":"message_delta","delta":{"stop_reason":"tool_use","stop_sequence":null},"usage":{"output_tokens":6}}`)
				ev("message_stop", `{"type":"message_stop"}`)
				return
			}
			ev("content_block_start", `{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`)
			ev("content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Hel"}}`)
			ev("content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"lo"}}`)
			ev("content_block_stop", `{"type":"content_block_stop","index":0}`)
			ev("message_delta", `{"type":"message_delta","delta":{"stop_reason":"end_turn","stop_sequence":null},"usage":{"output_tokens":4}}`)
			ev("message_stop", `{"type":"message_stop"}`)
		})
		e, a := newEnsemble(t, anthropicProfile(srv.URL), ensemble.Agent{}, echoTool)
		var log eventLog
		req := request(e, a, "go")
		req.Events = log.sink()
		res := newTestRunner(Options{Stream: true}).Run(context.Background(), req)
		if res.Err != nil {
			t.Fatal(res.Err)
		}
		if res.Output != "Hello" || res.Usage.Requests != 2 || res.Usage.InputTokens != 18 || res.Usage.OutputTokens != 10 {
			t.Errorf("output %#v usage %+v", res.Output, res.Usage)
		}
		reqs := srv.requests()
		if reqs[0].Body["stream"] != true {
			t.Errorf("not streamed: %s", reqs[0].Raw)
		}
		msgs := messages(t, reqs[1])
		use := msgs[1]["content"].([]any)[0].(map[string]any)
		result := msgs[2]["content"].([]any)[0].(map[string]any)
		if use["type"] != "tool_use" || use["input"].(map[string]any)["region"] != "EMEA" ||
			result["tool_use_id"] != "toolu_1" || result["content"].([]any)[0].(map[string]any)["text"] != `echo:{"region":"EMEA"}` {
			t.Errorf("second request %s", reqs[1].Raw)
		}
		deltas := log.deltas()
		if strings.Join(deltas, "") != "Hello" {
			t.Errorf("deltas %q", deltas)
		}
		assertNoKey(t, res, log.all())
	})
}

func TestNetworkErrorIsRetried(t *testing.T) {
	t.Parallel()
	for _, provider := range []string{"openai", "anthropic"} {
		t.Run(provider, func(t *testing.T) {
			t.Parallel()
			srv := newFakeServer(t, func(n int, _ recorded, w http.ResponseWriter, _ *http.Request) {
				switch n {
				case 0: // drop the connection without an answer
					conn, _, err := w.(http.Hijacker).Hijack()
					if err == nil {
						_ = conn.Close()
					}
					return
				case 1:
					w.Header().Set("Content-Type", "application/json")
					w.Header().Set("Retry-After", "0")
					if provider == "openai" {
						w.WriteHeader(http.StatusServiceUnavailable)
						_, _ = io.WriteString(w, `{"error":{"message":"The engine is currently overloaded, please try again later","type":"server_error"}}`)
					} else {
						w.WriteHeader(529)
						_, _ = io.WriteString(w, `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`)
					}
					return
				}
				w.Header().Set("Content-Type", "application/json")
				if provider == "openai" {
					_, _ = io.WriteString(w, oaText("after a reconnect"))
				} else {
					_, _ = io.WriteString(w, anReply("end_turn", 1, 1, anText("after a reconnect")))
				}
			})
			p := openaiProfile(srv.URL)
			if provider == "anthropic" {
				p = anthropicProfile(srv.URL)
			}
			e, a := newEnsemble(t, p, ensemble.Agent{})
			res := newTestRunner(Options{MaxRetries: 2, MaxRetryDelay: 50 * time.Millisecond}).Run(context.Background(), request(e, a, "go"))
			if res.Err != nil {
				t.Fatal(res.Err)
			}
			if res.Output != "after a reconnect" || len(srv.requests()) != 3 || res.Usage.Requests != 1 {
				t.Errorf("output %#v after %d requests, usage %+v", res.Output, len(srv.requests()), res.Usage)
			}
		})
	}
}

// TestRequestTimeout: timeout_seconds bounds each request (the server
// would answer only after 30 s, when the test has long failed). The
// providers differ on what follows (README: Retries): OpenAI's fails at
// once, Anthropic's retries the attempt like a connection error.
func TestRequestTimeout(t *testing.T) {
	t.Parallel()
	for _, provider := range []string{"openai", "anthropic"} {
		t.Run(provider, func(t *testing.T) {
			t.Parallel()
			srv := newFakeServer(t, func(_ int, _ recorded, _ http.ResponseWriter, r *http.Request) {
				select {
				case <-r.Context().Done():
				case <-time.After(30 * time.Second):
				}
			})
			p := openaiProfile(srv.URL)
			if provider == "anthropic" {
				p = anthropicProfile(srv.URL)
			}
			p.Timeout = 200 * time.Millisecond
			e, a := newEnsemble(t, p, ensemble.Agent{})
			res := newTestRunner(Options{MaxRetries: 1}).Run(context.Background(), request(e, a, "go"))
			if res.Err == nil || res.StopReason != StopError {
				t.Fatalf("err %v stop %q", res.Err, res.StopReason)
			}
			mustContain(t, res.Err.Error(), provider+": request timed out (timeout_seconds)")
			if n, want := len(srv.requests()), map[string]int{"openai": 1, "anthropic": 2}[provider]; n != want {
				t.Errorf("%d attempts, want %d", n, want)
			}
		})
	}
}

// TestCancelDuringRetryWait: a cancelled context ends the wait for a long
// Retry-After at once, with no second attempt, for both providers.
func TestCancelDuringRetryWait(t *testing.T) {
	t.Parallel()
	for _, provider := range []string{"openai", "anthropic"} {
		t.Run(provider, func(t *testing.T) {
			t.Parallel()
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			srv := newFakeServer(t, func(_ int, _ recorded, w http.ResponseWriter, _ *http.Request) {
				w.Header().Set("Content-Type", "application/json")
				w.Header().Set("Retry-After", "60")
				w.WriteHeader(http.StatusTooManyRequests)
				_, _ = io.WriteString(w, `{"type":"error","error":{"type":"rate_limit_error","message":"slow down"}}`)
				time.AfterFunc(100*time.Millisecond, cancel) // while the client waits
			})
			p := openaiProfile(srv.URL)
			if provider == "anthropic" {
				p = anthropicProfile(srv.URL)
			}
			e, a := newEnsemble(t, p, ensemble.Agent{})
			res := newTestRunner(Options{MaxRetries: 2}).Run(ctx, request(e, a, "go"))
			if res.StopReason != StopCancelled || res.Err == nil || res.Err.Error() != "cancelled" {
				t.Fatalf("stop %q err %v", res.StopReason, res.Err)
			}
			if n := len(srv.requests()); n != 1 {
				t.Errorf("%d attempts", n)
			}
		})
	}
}

// TestBaseURLVersionPath: Ollama's OpenAI-compatible API lives under /v1,
// Anthropic's SDK adds /v1 itself; a base_url written the other way round
// (http://host:11434, https://proxy/v1) still reaches the right path.
func TestBaseURLVersionPath(t *testing.T) {
	t.Parallel()
	cases := []struct {
		provider, suffix, path string
	}{
		{"ollama", "", "/v1/chat/completions"},
		{"ollama", "/", "/v1/chat/completions"},
		{"ollama", "/v1", "/v1/chat/completions"},
		{"ollama", "/v1/", "/v1/chat/completions"},
		{"anthropic", "", "/v1/messages"},
		{"anthropic", "/v1", "/v1/messages"},
		{"anthropic", "/v1/", "/v1/messages"},
		{"anthropic", "/proxy", "/proxy/v1/messages"},
		{"openai", "", "/chat/completions"}, // compatible servers: as written
		{"openai", "/api/v1", "/api/v1/chat/completions"},
	}
	for _, tc := range cases {
		t.Run(tc.provider+tc.suffix, func(t *testing.T) {
			t.Parallel()
			reply := oaText("ok")
			if tc.provider == "anthropic" {
				reply = anReply("end_turn", 1, 1, anText("ok"))
			}
			srv := newFakeServer(t, scripted(reply))
			p := ensemble.ModelProfile{Provider: tc.provider, Model: "m", BaseURL: srv.URL + tc.suffix}
			if tc.provider == "anthropic" {
				p = anthropicProfile(srv.URL + tc.suffix)
			}
			e, a := newEnsemble(t, p, ensemble.Agent{})
			res := newTestRunner(Options{}).Run(context.Background(), request(e, a, "go"))
			if res.Err != nil {
				t.Fatal(res.Err)
			}
			if got := srv.requests()[0].Path; got != tc.path {
				t.Errorf("path %s, want %s", got, tc.path)
			}
		})
	}
}

// TestSDKEnvironmentIgnored: the vendors' environment variables never
// reach a request; keys come only from api_key_env, base URLs only from the
// profile.
func TestSDKEnvironmentIgnored(t *testing.T) {
	for k, v := range map[string]string{
		"OPENAI_API_KEY": "sk-from-process-env", "OPENAI_BASE_URL": "http://openai.invalid/v1",
		"OPENAI_ORG_ID": "org-env", "OPENAI_PROJECT_ID": "proj-env",
		"ANTHROPIC_API_KEY": "sk-ant-from-process-env", "ANTHROPIC_AUTH_TOKEN": "tok-from-process-env",
		"ANTHROPIC_BASE_URL": "http://anthropic.invalid",
	} {
		t.Setenv(k, v)
	}
	var hosts []string
	var mu sync.Mutex
	srv := newFakeServer(t, func(_ int, r recorded, w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		if r.Path == "/v1/messages" {
			_, _ = io.WriteString(w, anReply("end_turn", 1, 1, anText("ok")))
			return
		}
		_, _ = io.WriteString(w, oaText("ok"))
	})
	target := srv.Addr()
	client := &http.Client{Transport: roundTripFunc(func(r *http.Request) (*http.Response, error) {
		mu.Lock()
		hosts = append(hosts, r.URL.Host)
		mu.Unlock()
		r = r.Clone(r.Context())
		r.URL.Scheme, r.URL.Host = "http", target
		return http.DefaultTransport.RoundTrip(r)
	})}
	profiles := []ensemble.ModelProfile{
		{Provider: "openai", Model: "m", APIKeyEnv: "TEST_OPENAI_KEY"}, // OpenAI itself
		{Provider: "openai", Model: "m", BaseURL: "http://compat.test/v1"},
		{Provider: "ollama", Model: "m"},
		{Provider: "anthropic", Model: "m", APIKeyEnv: "TEST_ANTHROPIC_KEY"},
	}
	for _, p := range profiles {
		e, a := newEnsemble(t, p, ensemble.Agent{})
		if res := newTestRunner(Options{HTTPClient: client}).Run(context.Background(), request(e, a, "go")); res.Err != nil {
			t.Fatal(res.Err)
		}
	}
	if strings.Join(hosts, " ") != "api.openai.com compat.test localhost:11434 api.anthropic.com" {
		t.Errorf("hosts %v", hosts)
	}
	reqs := srv.requests()
	wantAuth := []string{"Bearer " + testKey, "", "", ""}
	for i, r := range reqs {
		if got := r.Header.Get("Authorization"); got != wantAuth[i] {
			t.Errorf("request %d: Authorization %q", i, got)
		}
		for _, h := range []string{"OpenAI-Organization", "OpenAI-Project"} {
			if r.Header.Get(h) != "" {
				t.Errorf("request %d: %s sent", i, h)
			}
		}
	}
	if got := reqs[3].Header.Get("X-Api-Key"); got != testKey {
		t.Errorf("anthropic key %q", got)
	}
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }
