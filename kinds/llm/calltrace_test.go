package llm

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"testing"

	"github.com/ensemble-run/ensemble/agent"
	"github.com/ensemble-run/ensemble/ensemble"
	"github.com/ensemble-run/ensemble/internal/llmtrace"
)

// TestTraceIsWhatWasSent runs two executions of an agent (the second with
// the first's memory and a two-request tool loop) against a server
// speaking each provider's wire format, and checks that the message list,
// model and parameters rebuilt from the records are what the server got.
func TestTraceIsWhatWasSent(t *testing.T) {
	t.Parallel()
	temp := 0.25
	cases := []struct {
		name    string
		profile func(url string) ensemble.ModelProfile
		replies []string
		flatten func(t *testing.T, body map[string]any) []string
		window  *ensemble.ContextWindow
	}{
		{"openai", openaiProfile,
			[]string{oaText("first answer"), oaCalls(call{"c1", "echo", `{"region":"EMEA"}`}), oaText("second\nanswer")}, flattenOpenAI, nil},
		// A window that leaves the memory's first exchange out.
		{"openai window", openaiProfile,
			[]string{oaText("first answer"), oaCalls(call{"c1", "echo", `{"region":"EMEA"}`}), oaText("second\nanswer")}, flattenOpenAI,
			&ensemble.ContextWindow{Strategy: StrategyRecentTurns, RecentTurns: 1}},
		{"ollama", func(url string) ensemble.ModelProfile {
			return ensemble.ModelProfile{Provider: "ollama", Model: "llama3.2", BaseURL: url + "/v1"}
		}, []string{oaText("first answer"), oaCalls(call{"c1", "echo", `{"region":"EMEA"}`}), oaText("second\nanswer")}, flattenOpenAI, nil},
		{"anthropic", anthropicProfile,
			[]string{anReply("end_turn", 10, 5, anText("first answer")),
				anReply("tool_use", 20, 7, anToolUse("c1", "echo", map[string]any{"region": "EMEA"})),
				anReply("end_turn", 30, 9, anText("second\nanswer"))}, flattenAnthropic, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			srv := newFakeServer(t, scripted(tc.replies...))
			p := tc.profile(srv.URL)
			p.Temperature = &temp
			p.Options = map[string]any{"top_p": 0.5}
			p.ContextWindow = tc.window
			e, a := newEnsemble(t, p, ensemble.Agent{Spec: &Spec{Prompt: "Be brief."}}, echoTool)
			r := newTestRunner(Options{})
			req1 := request(e, a, "the input")
			res1 := r.Run(context.Background(), req1)
			if res1.Err != nil {
				t.Fatal(res1.Err)
			}
			mem1, _ := json.Marshal(res1.Memory) // as the state keeps it
			req2 := request(e, a, "the input")
			req2.Turn, req2.Execution, req2.Memory = 3, 2, mem1
			res2 := r.Run(context.Background(), req2)
			if res2.Err != nil {
				t.Fatal(res2.Err)
			}
			got := srv.requests()
			if len(got) != 3 {
				t.Fatalf("%d requests", len(got))
			}
			// What the inspector does: the memory referred to is the
			// memory the referred execution left.
			tr1, sent1 := rebuild(t, res1, nil, nil)
			if tr1.Memory != nil || len(sent1) != 1 {
				t.Fatalf("first execution: memory %+v, %d requests", tr1.Memory, len(sent1))
			}
			tr2, sent2 := rebuild(t, res2, res1, mem1)
			if tr2.Memory == nil || *tr2.Memory != (llmtrace.MemoryRef{Turn: 1, Execution: 1, Messages: 2}) {
				t.Fatalf("memory reference %+v", tr2.Memory)
			}
			if len(sent2) != 2 {
				t.Fatalf("second execution: %d requests", len(sent2))
			}
			if tc.window != nil && (len(sent2[0].Sent) != 1 || sent2[0].Sent[0] != [2]int{2, 3}) {
				t.Errorf("the window's request sent %v, want the new message only", sent2[0].Sent)
			}
			all := append(sent1, sent2...)
			for i, s := range all {
				want := tc.flatten(t, got[i].Body)
				have := flattenNeutral(t, s.Messages)
				if !reflect.DeepEqual(have, want) {
					t.Errorf("request %d: recorded\n%q\nsent\n%q", i+1, have, want)
				}
				if got[i].Body["model"] != s.Model || got[i].Body["temperature"] != *s.Temperature || got[i].Body["top_p"] != s.Options["top_p"] {
					t.Errorf("request %d: parameters %+v, sent %s", i+1, s.Request, got[i].Raw)
				}
				if s.Usage == nil || s.Usage.InputTokens == 0 || s.LatencyMS <= 0 {
					t.Errorf("request %d: usage %+v latency %v", i+1, s.Usage, s.LatencyMS)
				}
			}
			if len(tr2.Tools) != 1 || tr2.Tools[0].Name != "echo" || tr2.Tools[0].Schema == nil {
				t.Errorf("tools %+v", tr2.Tools)
			}
			var reply Message
			_ = json.Unmarshal(sent2[1].Reply, &reply)
			if reply.Content != "second\nanswer" || sent2[1].StopReason != replyEndTurn {
				t.Errorf("last reply %+v (%s)", reply, sent2[1].StopReason)
			}
			// The record holds no copy of the memory's messages.
			raw, _ := json.Marshal(res2.Details)
			if n := len(raw); n > 2000 {
				t.Errorf("the trace takes %d bytes: %s", n, raw)
			}
		})
	}
}

// rebuild reads an execution's trace back as the inspector does: the
// memory sent from the memory its reference names (prev's, as stored in
// prevMem), the rest from the memory the execution left.
func rebuild(t *testing.T, res, prev *agent.Result, prevMem json.RawMessage) (*llmtrace.Trace, []llmtrace.Sent) {
	t.Helper()
	var tr llmtrace.Trace
	if ok, err := res.Details.Decode(llmtrace.Detail, &tr); !ok || err != nil {
		t.Fatalf("no trace (%v)", err)
	}
	after, _ := json.Marshal(res.Memory)
	var memSent []json.RawMessage
	n := 0
	if tr.Memory != nil {
		memSent, n = llmtrace.Messages(prevMem), tr.Memory.Messages
	}
	return &tr, llmtrace.Rebuild(&tr, llmtrace.Conversation(memSent, llmtrace.Messages(after), n))
}

func flattenNeutral(t *testing.T, msgs []json.RawMessage) []string {
	var out []string
	for _, raw := range msgs {
		var m Message
		if err := json.Unmarshal(raw, &m); err != nil {
			t.Fatal(err)
		}
		if m.Role == RoleTool {
			out = append(out, "result:"+m.ToolCallID+":"+m.Content)
			continue
		}
		if m.Content != "" {
			out = append(out, string(m.Role)+":"+m.Content)
		}
		for _, c := range m.ToolCalls {
			out = append(out, "call:"+c.ID+":"+c.Name+":"+canon(c.Arguments))
		}
	}
	return out
}

func canon(s string) string {
	var v any
	if json.Unmarshal([]byte(s), &v) != nil {
		return s
	}
	b, _ := json.Marshal(v)
	return string(b)
}

func flattenOpenAI(t *testing.T, body map[string]any) []string {
	var out []string
	for _, x := range body["messages"].([]any) {
		m := x.(map[string]any)
		role, _ := m["role"].(string)
		if role == "tool" {
			out = append(out, fmt.Sprintf("result:%v:%v", m["tool_call_id"], m["content"]))
			continue
		}
		if c, _ := m["content"].(string); c != "" {
			out = append(out, role+":"+c)
		}
		calls, _ := m["tool_calls"].([]any)
		for _, y := range calls {
			c := y.(map[string]any)
			fn := c["function"].(map[string]any)
			out = append(out, fmt.Sprintf("call:%v:%v:%s", c["id"], fn["name"], canon(fn["arguments"].(string))))
		}
	}
	return out
}

func flattenAnthropic(t *testing.T, body map[string]any) []string {
	var out []string
	switch s := body["system"].(type) {
	case string:
		out = append(out, "system:"+s)
	case []any:
		for _, b := range s {
			out = append(out, fmt.Sprintf("system:%v", b.(map[string]any)["text"]))
		}
	}
	for _, x := range body["messages"].([]any) {
		m := x.(map[string]any)
		role, _ := m["role"].(string)
		if s, ok := m["content"].(string); ok {
			out = append(out, role+":"+s)
			continue
		}
		for _, y := range m["content"].([]any) {
			b := y.(map[string]any)
			switch b["type"] {
			case "text":
				out = append(out, fmt.Sprintf("%s:%v", role, b["text"]))
			case "tool_use":
				in, _ := json.Marshal(b["input"])
				out = append(out, fmt.Sprintf("call:%v:%v:%s", b["id"], b["name"], canon(string(in))))
			case "tool_result":
				var text string
				switch c := b["content"].(type) {
				case string:
					text = c
				case []any:
					for _, z := range c {
						text += fmt.Sprint(z.(map[string]any)["text"])
					}
				}
				out = append(out, fmt.Sprintf("result:%v:%s", b["tool_use_id"], text))
			}
		}
	}
	return out
}

// TestTraceResponseFormat: the output schema a request asked for is
// recorded as the server got it (OpenAI's response_format json_schema).
func TestTraceResponseFormat(t *testing.T) {
	t.Parallel()
	srv := newFakeServer(t, scripted(oaText(`{"approved":true}`)))
	e, a := newEnsemble(t, openaiProfile(srv.URL), schemaAgent(t, approvalDoc(), 0))
	res := newTestRunner(Options{}).Run(context.Background(), request(e, a, "go"))
	if res.Err != nil {
		t.Fatal(res.Err)
	}
	var tr llmtrace.Trace
	if ok, err := res.Details.Decode(llmtrace.Detail, &tr); !ok || err != nil {
		t.Fatalf("no trace (%v)", err)
	}
	js, _ := srv.requests()[0].Body["response_format"].(map[string]any)["json_schema"].(map[string]any)
	rf := tr.ResponseFormat
	if rf == nil || js == nil || rf.Name != js["name"] || toJSON(rf.Schema) != toJSON(js["schema"]) || rf.Strict != js["strict"] {
		t.Errorf("recorded %+v, sent %v", rf, js)
	}
}
