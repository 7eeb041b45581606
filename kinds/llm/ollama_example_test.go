package llm

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ensemble-run/ensemble/agent"
	"github.com/ensemble-run/ensemble/engine"
	"github.com/ensemble-run/ensemble/ensemble"
	"github.com/ensemble-run/ensemble/events"
	"github.com/ensemble-run/ensemble/kinds/script"
)

// toHost sends every request to target, after checking that it was meant
// for want (scheme://host:port).
type toHost struct {
	t      *testing.T
	want   string
	target *url.URL
}

func (h toHost) RoundTrip(r *http.Request) (*http.Response, error) {
	if got := r.URL.Scheme + "://" + r.URL.Host; got != h.want {
		h.t.Errorf("request to %s, want %s", got, h.want)
	}
	r = r.Clone(r.Context())
	r.URL.Scheme, r.URL.Host, r.Host = h.target.Scheme, h.target.Host, h.target.Host
	return http.DefaultTransport.RoundTrip(r)
}

// TestLocalOllamaExample runs examples/local-ollama as it is, against a fake
// Ollama at the default address (http://localhost:11434/v1) speaking its
// OpenAI-compatible wire format: tool calls reported with finish_reason
// "stop", no key. The model calls the real stock_level tool (once with a
// warehouse its schema does not allow), then answers with a fenced JSON
// block; the real checker accepts it.
func TestLocalOllamaExample(t *testing.T) {
	t.Parallel()
	srv := newFakeServer(t, scripted(
		oaReply("stop", "", 120, 30,
			call{"call_n", "stock_level", `{"product":"blue widget","warehouse":"north"}`},
			call{"call_w", "stock_level", `{"product":"blue widget","warehouse":"west"}`}),
		oaReply("stop", "", 200, 30,
			call{"call_s", "stock_level", `{"product":"blue widget","warehouse":"south"}`},
			call{"call_e", "stock_level", `{"product":"blue widget","warehouse":"east"}`}),
		oaReply("stop", "```json\n{\"warehouse\": \"south\", \"count\": 40, \"summary\": \"South has 40.\"}\n```", 300, 20),
	))
	target, _ := url.Parse(srv.URL)
	noEnv := func(string) (string, bool) { return "", false } // no key anywhere
	e, err := ensemble.Load(filepath.Join("..", "..", "examples", "local-ollama", "ensemble.yaml"), ensemble.LoadOptions{Kinds: testKinds, LookupEnv: noEnv})
	if err != nil {
		t.Fatal(err)
	}
	models := New(Options{
		HTTPClient: &http.Client{Transport: toHost{t: t, want: "http://localhost:11434", target: target}},
		LookupEnv:  noEnv,
		MaxRetries: -1,
	})
	var log eventLog
	res := engine.New(e, "", engine.Options{
		Runner: agent.RunnerFunc(func(ctx context.Context, req *agent.Request) *agent.Result {
			if req.Agent.Kind == (Kind{}) {
				return models.Run(ctx, req)
			}
			return (&script.Runner{}).Run(ctx, req)
		}),
		Events: log.sink(),
	}).Run(context.Background())

	if res.CompletionReason != engine.Completed || len(res.Errors) != 0 {
		t.Fatalf("reason %s errors %v", res.CompletionReason, res.Errors)
	}
	var order []string
	for _, rec := range res.ConversationHistory {
		order = append(order, rec.AgentName)
	}
	if strings.Join(order, ",") != "catalog,inventory_assistant,checker" {
		t.Errorf("order %v", order)
	}
	answer, _ := json.Marshal(res.FinalState["inventory_assistant"])
	checked, _ := json.Marshal(res.FinalState["checker"])
	if string(answer) != `{"count":40,"summary":"South has 40.","warehouse":"south"}` || string(checked) != `{"ok":true}` {
		t.Errorf("final state %s %s", answer, checked)
	}
	rec := res.ConversationHistory[1]
	if rec.StopReason == nil || *rec.StopReason != StopEndTurn || rec.Usage == nil || rec.Usage.Requests != 3 ||
		rec.Usage.InputTokens != 620 || rec.Usage.OutputTokens != 80 {
		t.Errorf("record %+v usage %+v", rec, rec.Usage)
	}
	if res.Usage.Requests != 3 || res.Usage.InputTokens != 620 || res.Usage.OutputTokens != 80 {
		t.Errorf("run usage %+v", res.Usage)
	}

	reqs := srv.requests()
	if len(reqs) != 3 {
		t.Fatalf("%d requests", len(reqs))
	}
	for _, r := range reqs {
		if r.Path != "/v1/chat/completions" || r.Header.Get("Authorization") != "" || r.Body["tool_choice"] != nil ||
			r.Body["model"] != "llama3.2" || r.Body["temperature"] != 0.0 || r.Body["max_tokens"] != 512.0 {
			t.Errorf("request %s %s %v", r.Path, r.Raw, r.Header)
		}
		sys := messages(t, r)[0]["content"].(string)
		if !strings.HasPrefix(sys, "You are a careful assistant. Use the tools for facts; never guess numbers.\n\nAnswer the question using the catalog.") {
			t.Errorf("system prompt %q", sys)
		}
	}
	user := messages(t, reqs[0])[1]["content"].(string)
	mustContain(t, user, "Input:\nWhich warehouse has the most blue widgets")
	mustContain(t, user, "Output of catalog:\n{\"products\":[\"blue widget\",\"red widget\"]")
	// the tool ran for real; the schema violation went back to the model
	m := messages(t, reqs[1])
	if m[3]["tool_call_id"] != "call_n" || m[3]["content"] != `{"product": "blue widget", "warehouse": "north", "count": 12}` {
		t.Errorf("north result %v", m[3])
	}
	if m[4]["tool_call_id"] != "call_w" || !strings.HasPrefix(m[4]["content"].(string), `Error: invalid arguments for tool "stock_level": at '/warehouse'`) {
		t.Errorf("west result %v", m[4])
	}
	m = messages(t, reqs[2])
	if len(m) != 8 || m[6]["content"] != `{"product": "blue widget", "warehouse": "south", "count": 40}` {
		t.Errorf("third request %s", reqs[2].Raw)
	}
	var calls int
	for _, ev := range log.all() {
		if ev.Type == events.ToolCallCompleted {
			calls++
		}
	}
	if calls != 4 {
		t.Errorf("%d tool_call_completed events", calls)
	}
}
