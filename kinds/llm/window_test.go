package llm

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/ensemble-run/ensemble/ensemble"
)

func u(s string) Message { return Message{Role: RoleUser, Content: s} }
func as(s string) Message {
	return Message{Role: RoleAssistant, Content: s}
}
func ac(ids ...string) Message {
	m := Message{Role: RoleAssistant}
	for _, id := range ids {
		m.ToolCalls = append(m.ToolCalls, ToolCall{ID: id, Name: "t", Arguments: "{}"})
	}
	return m
}
func tr(id string) Message { return Message{Role: RoleTool, ToolCallID: id, Content: "r" + id} }

// label names messages for compact comparisons: u1, a2, a(x,y), t:x.
func labels(msgs []Message) string {
	var out []string
	for _, m := range msgs {
		switch {
		case m.Role == RoleTool:
			out = append(out, "t:"+m.ToolCallID)
		case len(m.ToolCalls) > 0:
			var ids []string
			for _, c := range m.ToolCalls {
				ids = append(ids, c.ID)
			}
			out = append(out, "a("+strings.Join(ids, ",")+")")
		default:
			out = append(out, m.Content)
		}
	}
	return strings.Join(out, " ")
}

func wordTokens(msgs []Message) func(int) int {
	return func(i int) int { return len(strings.Fields(msgs[i].Content)) + 1 }
}

// conversation used by the table below:
// u1 a(x,y) t:x t:y a1 u2 a(z) t:z a2 u3
var longConv = []Message{
	u("u1"), ac("x", "y"), tr("x"), tr("y"), as("a1"),
	u("u2"), ac("z"), tr("z"), as("a2"),
	u("u3"),
}

func TestTrimWindow(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		msgs []Message
		w    ensemble.ContextWindow
		want string
	}{
		{"no limits", longConv, ensemble.ContextWindow{}, "u1 a(x,y) t:x t:y a1 u2 a(z) t:z a2 u3"},
		{"within limit", longConv, ensemble.ContextWindow{MaxMessages: 10}, "u1 a(x,y) t:x t:y a1 u2 a(z) t:z a2 u3"},
		// dropping u1 and a(x,y) alone would orphan t:x and t:y: the call
		// goes with its results.
		{"would orphan results", longConv, ensemble.ContextWindow{MaxMessages: 8}, "a1 u2 a(z) t:z a2 u3"},
		{"oldest first", longConv, ensemble.ContextWindow{MaxMessages: 4}, "a(z) t:z a2 u3"},
		{"newest user always kept", longConv, ensemble.ContextWindow{MaxMessages: 1}, "u3"},
		{"middle out", longConv, ensemble.ContextWindow{MaxMessages: 6, Strategy: StrategyMiddleOut}, "u1 a(x,y) t:x t:y a2 u3"},
		{"middle out small", longConv, ensemble.ContextWindow{MaxMessages: 2, Strategy: StrategyMiddleOut}, "u1 u3"},
		{"recent turns 1", longConv, ensemble.ContextWindow{Strategy: StrategyRecentTurns, RecentTurns: 1}, "u3"},
		{"recent turns 2", longConv, ensemble.ContextWindow{Strategy: StrategyRecentTurns, RecentTurns: 2}, "u2 a(z) t:z a2 u3"},
		{"recent turns then limit", longConv, ensemble.ContextWindow{Strategy: StrategyRecentTurns, RecentTurns: 2, MaxMessages: 3}, "a2 u3"},
		{"recent turns default 3", longConv, ensemble.ContextWindow{Strategy: StrategyRecentTurns}, "u1 a(x,y) t:x t:y a1 u2 a(z) t:z a2 u3"},
		// inside the current tool loop (after the newest user message): the
		// newest user message and the latest round stay, older rounds go.
		{"current tool loop", []Message{u("u1"), as("a1"), u("u2"), ac("p"), tr("p"), ac("q"), tr("q"), ac("r"), tr("r")},
			ensemble.ContextWindow{MaxMessages: 4}, "u2 a(r) t:r"},
		{"max tokens", longConv, ensemble.ContextWindow{MaxTokens: 10}, "a(z) t:z a2 u3"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			before, _ := json.Marshal(tc.msgs)
			got := trimWindow(tc.msgs, &tc.w, 2, wordTokens(tc.msgs))
			if labels(got) != tc.want {
				t.Errorf("got  %s\nwant %s", labels(got), tc.want)
			}
			after, _ := json.Marshal(tc.msgs)
			if string(before) != string(after) {
				t.Errorf("trimWindow modified its input")
			}
		})
	}
}

// TestTrimWindowInvariants checks the invariants on random conversations.
func TestTrimWindowInvariants(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(1, 2))
	strategies := []string{"", StrategyOldestFirst, StrategyMiddleOut, StrategyRecentTurns}
	for iter := 0; iter < 3000; iter++ {
		var msgs []Message
		n := 1 + rng.IntN(30)
		id := 0
		msgs = append(msgs, u("u0"))
		for len(msgs) < n {
			switch rng.IntN(3) {
			case 0:
				msgs = append(msgs, u(fmt.Sprintf("u%d %s", len(msgs), strings.Repeat("w ", rng.IntN(20)))))
			case 1:
				msgs = append(msgs, as(fmt.Sprintf("a%d %s", len(msgs), strings.Repeat("w ", rng.IntN(20)))))
			case 2:
				k := 1 + rng.IntN(3)
				var ids []string
				for j := 0; j < k; j++ {
					id++
					ids = append(ids, fmt.Sprint(id))
				}
				msgs = append(msgs, ac(ids...))
				for _, x := range ids {
					msgs = append(msgs, tr(x))
				}
			}
		}
		w := ensemble.ContextWindow{Strategy: strategies[rng.IntN(len(strategies))], RecentTurns: rng.IntN(4)}
		if rng.IntN(2) == 0 {
			w.MaxMessages = 1 + rng.IntN(20)
		}
		if rng.IntN(2) == 0 {
			w.MaxTokens = 5 + rng.IntN(80)
		}
		got := trimWindow(msgs, &w, 3, wordTokens(msgs))
		desc := fmt.Sprintf("window %+v\nin  %s\nout %s", w, labels(msgs), labels(got))

		// a subsequence of the original, in order
		j := 0
		for _, m := range got {
			for j < len(msgs) && !sameMsg(msgs[j], m) {
				j++
			}
			if j == len(msgs) {
				t.Fatalf("not an ordered subsequence\n%s", desc)
			}
			j++
		}
		// the newest user message and the last message are kept
		lastUser := -1
		for i := range msgs {
			if msgs[i].Role == RoleUser {
				lastUser = i
			}
		}
		if !containsMsg(got, msgs[lastUser]) || !sameMsg(got[len(got)-1], msgs[len(msgs)-1]) {
			t.Fatalf("newest user message or last message dropped\n%s", desc)
		}
		// calls and results go together
		calls, results := map[string]bool{}, map[string]bool{}
		for _, m := range got {
			for _, c := range m.ToolCalls {
				calls[c.ID] = true
			}
			if m.Role == RoleTool {
				results[m.ToolCallID] = true
			}
		}
		for id := range calls {
			if !results[id] {
				t.Fatalf("call %s sent without its result\n%s", id, desc)
			}
		}
		for id := range results {
			if !calls[id] {
				t.Fatalf("result %s sent without its call\n%s", id, desc)
			}
		}
		// within limits, unless only protected units are left
		if len(units(got)) > 2 {
			if w.MaxMessages > 0 && len(got) > w.MaxMessages {
				t.Fatalf("over max_messages\n%s", desc)
			}
			if w.MaxTokens > 0 {
				toks := 3
				for i := range got {
					toks += wordTokens(got)(i)
				}
				if toks > w.MaxTokens {
					t.Fatalf("over max_tokens (%d)\n%s", toks, desc)
				}
			}
		}
	}
}

func sameMsg(a, b Message) bool {
	x, _ := json.Marshal(a)
	y, _ := json.Marshal(b)
	return string(x) == string(y)
}

func containsMsg(msgs []Message, m Message) bool {
	for _, x := range msgs {
		if sameMsg(x, m) {
			return true
		}
	}
	return false
}

// TestContextWindowTrimsOnlyWhatIsSent runs two executions with a small
// window: the requests are trimmed, the stored conversation is whole, and
// no tool result is sent without its call.
func TestContextWindowTrimsOnlyWhatIsSent(t *testing.T) {
	t.Parallel()
	srv := newFakeServer(t, scripted(
		oaCalls(call{"c1", "echo", `{"region":"A"}`}, call{"c2", "echo", `{"region":"B"}`}),
		oaText("first"),
		oaCalls(call{"c3", "echo", `{"region":"C"}`}),
		oaText("second"),
	))
	p := openaiProfile(srv.URL)
	p.ContextWindow = &ensemble.ContextWindow{MaxMessages: 100} // the agent's wins
	e, a := newEnsemble(t, p, ensemble.Agent{Spec: &Spec{ContextWindow: &ensemble.ContextWindow{MaxMessages: 4}}}, echoTool)
	r := newTestRunner(Options{})
	res := r.Run(context.Background(), request(e, a, "go"))
	if res.Err != nil {
		t.Fatal(res.Err)
	}
	req2 := request(e, a, "go")
	req2.Execution, req2.Memory = 2, res.Memory
	req2.Dependencies, req2.Fresh = map[string]any{"d": "new"}, []string{"d"}
	res = r.Run(context.Background(), req2)
	if res.Err != nil {
		t.Fatal(res.Err)
	}
	reqs := srv.requests()
	// request 2 (after the first round): user, a(c1,c2), t, t = 4 → whole.
	if n := len(messages(t, reqs[1])); n != 5 {
		t.Errorf("request 2 has %d messages", n)
	}
	// request 3 (execution 2): stored u, a(c1,c2), t, t, "first", new u
	// = 6 > 4: the oldest go, the call with both results as one.
	m3 := messages(t, reqs[2])
	if len(m3) != 1+2 || m3[0]["role"] != "system" || m3[1]["content"] != "first" || m3[2]["role"] != "user" {
		t.Errorf("request 3: %v", m3)
	}
	// request 4: u, a(c3), t:c3 kept (newest user + latest round) = 3 + "first" = 4
	m4 := messages(t, reqs[3])
	if len(m4) != 1+4 || m4[1]["content"] != "first" {
		t.Errorf("request 4: %v", m4)
	}
	for _, r := range reqs {
		checkNoOrphans(t, messages(t, r))
	}
	stored := storedMessages(t, res)
	if len(stored) != 9 {
		t.Errorf("stored %d messages, want the whole conversation (9)", len(stored))
	}
}

// checkNoOrphans checks an OpenAI request: every tool message answers a
// call of an earlier assistant message in the same request.
func checkNoOrphans(t *testing.T, msgs []map[string]any) {
	t.Helper()
	calls := map[string]bool{}
	for _, m := range msgs {
		if tcs, ok := m["tool_calls"].([]any); ok {
			for _, tc := range tcs {
				calls[tc.(map[string]any)["id"].(string)] = true
			}
		}
		if m["role"] == "tool" && !calls[m["tool_call_id"].(string)] {
			t.Errorf("orphan tool result %v in %v", m, msgs)
		}
	}
}

func TestTokenCounters(t *testing.T) {
	t.Parallel()
	if n := TiktokenCount("hello world"); n != 2 {
		t.Errorf("TiktokenCount = %d", n)
	}
	if n := TiktokenCount(""); n != 0 {
		t.Errorf("empty = %d", n)
	}
	if n := EstimateTokens("abcdefgh"); n != 2 {
		t.Errorf("EstimateTokens = %d", n)
	}
	c := newTokenCache(EstimateTokens)
	m := Message{Role: RoleAssistant, Content: "abcd", ToolCalls: []ToolCall{{Name: "ab", Arguments: "{}"}}}
	if n := c.message(&m); n != perMessageTokens+1+1+1+perMessageTokens {
		t.Errorf("message tokens = %d", n)
	}
	if n := c.message(&m); n != perMessageTokens*2+3 {
		t.Errorf("cached message tokens = %d", n)
	}
}

// TestContextWindowStrategiesOnTheWire continues a stored conversation with
// Anthropic under each strategy and checks what is sent: the system prompt
// and the newest user message always, tool_use and its tool_result together,
// a conversation that would start with the assistant behind a user note;
// and that the stored conversation stays whole.
func TestContextWindowStrategiesOnTheWire(t *testing.T) {
	t.Parallel()
	stored := []Message{
		u("u1"), {Role: RoleAssistant, Content: "a-x", ToolCalls: []ToolCall{{ID: "x", Name: "echo", Arguments: `{"region":"A"}`}}},
		{Role: RoleTool, ToolCallID: "x", ToolName: "echo", Content: "rx"},
		as("a1"), u("u2"), as("a2"), u("u3"), as("a3"),
	}
	cases := []struct {
		name string
		w    ensemble.ContextWindow
		want string
	}{
		{"oldest_first", ensemble.ContextWindow{MaxMessages: 4, Strategy: StrategyOldestFirst},
			"user[(earlier messages omitted)] assistant[a2] user[u3] assistant[a3] user[Output of d:\nnew]"},
		{"middle_out", ensemble.ContextWindow{MaxMessages: 5, Strategy: StrategyMiddleOut},
			"user[u1] assistant[a-x use:x] user[result:x] assistant[a3] user[Output of d:\nnew]"},
		{"recent_turns", ensemble.ContextWindow{Strategy: StrategyRecentTurns, RecentTurns: 2},
			"user[u3] assistant[a3] user[Output of d:\nnew]"},
		// word-count tokens, 4 more per message: the system prompt 7, the
		// new user message 8, older messages 5 each: room for one of them
		{"max_tokens", ensemble.ContextWindow{MaxTokens: 7 + 8 + 5 + 4},
			"user[(earlier messages omitted)] assistant[a3] user[Output of d:\nnew]"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			srv := newFakeServer(t, scripted(anReply("end_turn", 1, 1, anText("a4"))))
			p := anthropicProfile(srv.URL)
			p.SystemPrompt = "Be brief."
			e, a := newEnsemble(t, p, ensemble.Agent{Spec: &Spec{Prompt: "Answer.", ContextWindow: &tc.w}})
			r := newTestRunner(Options{TokenCounter: func(s string) int { return len(strings.Fields(s)) }})
			req := request(e, a, "go")
			req.Execution, req.Memory = 2, encodeMemory(stored, nil)
			req.Dependencies, req.Fresh = map[string]any{"d": "new"}, []string{"d"}
			res := r.Run(context.Background(), req)
			if res.Err != nil {
				t.Fatal(res.Err)
			}
			body := srv.requests()[0].Body
			if sys := body["system"].([]any)[0].(map[string]any)["text"]; sys != "Be brief.\n\nAnswer." {
				t.Errorf("system %q", sys)
			}
			if got := anthropicLabels(t, body); got != tc.want {
				t.Errorf("sent %q\nwant %q", got, tc.want)
			}
			if got := storedMessages(t, res); len(got) != len(stored)+2 || !sameMsg(got[1], stored[1]) || !sameMsg(got[2], stored[2]) {
				t.Errorf("the stored conversation was trimmed: %s", labels(got))
			}
		})
	}
}

// anthropicLabels renders the messages of a Messages API request body as
// role[block block…]: text, use:ID, result:ID.
func anthropicLabels(t *testing.T, body map[string]any) string {
	t.Helper()
	var out []string
	for _, m := range body["messages"].([]any) {
		msg := m.(map[string]any)
		var blocks []string
		for _, b := range msg["content"].([]any) {
			blk := b.(map[string]any)
			switch blk["type"] {
			case "text":
				blocks = append(blocks, blk["text"].(string))
			case "tool_use":
				blocks = append(blocks, "use:"+blk["id"].(string))
			case "tool_result":
				blocks = append(blocks, "result:"+blk["tool_use_id"].(string))
			}
		}
		out = append(out, fmt.Sprintf("%s[%s]", msg["role"], strings.Join(blocks, " ")))
	}
	return strings.Join(out, " ")
}
