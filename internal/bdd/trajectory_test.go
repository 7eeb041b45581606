package bdd

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/cucumber/godog"

	"github.com/ensemble-run/ensemble/internal/fakemodel"
	"github.com/ensemble-run/ensemble/internal/mcptest"
	"github.com/ensemble-run/ensemble/kinds/llm"
)

// scriptedModel is a model server speaking the OpenAI chat completions
// wire format, whose replies a test decides: reply gets each request and
// returns the reply's text, or the tools to call.
type scriptedModel struct {
	srv   *fakemodel.Server
	mu    sync.Mutex
	reply func(r *modelRequest) modelReply
	// log is every request, in order.
	log []*modelRequest
}

type modelRequest struct {
	System   string
	Messages []modelMessage
	Tools    []string // the names the model is offered
	// ToolResults are the tool results of the conversation so far.
	ToolResults []string
}

type modelMessage struct {
	Role, Content string
}

type modelReply struct {
	Text  string
	Calls []string // tools to call, by the names offered: arguments {"text": "x"}
}

func newScriptedModel(t *testing.T, reply func(r *modelRequest) modelReply) *scriptedModel {
	m := &scriptedModel{reply: reply}
	// 1,000 tokens in and 500 out: at 1 and 2 per million, 0.002 a request.
	m.srv = fakemodel.New(t, m.serve, fakemodel.WithUsage(1000, 500))
	return m
}

// URL is the base URL of its API.
func (m *scriptedModel) URL() string { return m.srv.URL() }

// Requests is how many requests it answered.
func (m *scriptedModel) Requests() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.log)
}

func (m *scriptedModel) serve(r fakemodel.Request) fakemodel.Reply {
	if r.Body == nil {
		return fakemodel.Reply{Status: http.StatusBadRequest, Error: "bad request"}
	}
	req := &modelRequest{System: r.System, Tools: r.Tools}
	for _, msg := range r.Messages {
		if msg.Role == "tool" {
			req.ToolResults = append(req.ToolResults, msg.Content)
		}
		req.Messages = append(req.Messages, modelMessage{msg.Role, msg.Content})
	}
	m.mu.Lock()
	m.log = append(m.log, req)
	rep := m.reply(req)
	m.mu.Unlock()
	out := fakemodel.Reply{Text: rep.Text}
	for i, name := range rep.Calls {
		out.Calls = append(out.Calls, fakemodel.Call{ID: fmt.Sprintf("call_%d_%d", len(req.ToolResults), i), Name: name, Args: `{"text": "x"}`})
	}
	return out
}

// callInTurn is a model that calls the tools of plan, one reply each, in
// order, and then answers "done".
func callInTurn(plan ...[]string) func(r *modelRequest) modelReply {
	return func(r *modelRequest) modelReply {
		// Each reply with calls is followed by its results: the replies so
		// far are the assistant messages.
		n := 0
		for _, msg := range r.Messages {
			if msg.Role == "assistant" {
				n++
			}
		}
		if n < len(plan) {
			return modelReply{Calls: plan[n]}
		}
		return modelReply{Text: "done"}
	}
}

// writeFiles writes files under dir.
func writeFiles(t testing.TB, dir string, files map[string]string) {
	t.Helper()
	for name, body := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// toolEnsemble is an ensemble whose researcher calls tools of the test MCP
// server, t, through the model at modelURL, priced at 1 and 2 per million
// tokens; a child ensemble's critic (review/critic) and a fan-out's
// instances (summarize[i]) call them too.
func toolEnsemble(t *testing.T, modelURL string) string {
	t.Helper()
	dir := t.TempDir()
	mcpURL := mcptest.HTTP(t)
	writeFiles(t, dir, map[string]string{
		"e.yaml": fmt.Sprintf(`name: tools
input: find it
models:
  fake:
    provider: ollama
    model: fake-model
    base_url: %[1]s
    pricing: {input_per_million: 1, output_per_million: 2}
mcp_servers:
  t: {url: %[2]q}
agents:
  - name: researcher
    model_profile: fake
    prompt: Research.
    tools: [t.echo, t.fail, t.env]
  - name: lister
    ask: "Items?"
    dependencies: [researcher]
  - name: summarize
    model_profile: fake
    prompt: Summarize.
    tools: [t.*]
    dependencies: [lister]
    fan_out: {over: "context.lister.items"}
  - name: review
    ensemble: child.yaml
    output: critic
    dependencies: [summarize]
`, modelURL, mcpURL),
		"child.yaml": fmt.Sprintf(`name: child
models:
  fake: {provider: ollama, model: fake-model, base_url: %[1]s}
mcp_servers:
  t: {url: %[2]q}
agents:
  - name: critic
    model_profile: fake
    prompt: Criticize.
    tools: [t.echo]
`, modelURL, mcpURL),
	})
	return dir
}

// TestTrajectorySteps: the tools each agent called, in order, as the
// model asked for them, with a fan-out's instances and a child's agent by
// path; the requests the run made and what they cost; each failing step
// says what happened.
func TestTrajectorySteps(t *testing.T) {
	t.Parallel()
	model := newScriptedModel(t, func(r *modelRequest) modelReply {
		switch {
		case strings.HasPrefix(r.System, "Research."):
			return callInTurn([]string{"t__echo"}, []string{"t__env", "t__fail"}, []string{"t__echo"})(r)
		case strings.HasPrefix(r.System, "Criticize."):
			return callInTurn([]string{"t__echo"})(r)
		case strings.HasPrefix(lastUser(r), "Item 2 of 2:"):
			return callInTurn([]string{"t__fail"})(r)
		}
		return modelReply{Text: "summary"}
	})
	dir := toolEnsemble(t, model.URL())
	s := NewScenario(dir, Options{LLM: llm.New(llm.Options{})})
	for i, err := range []error{
		s.givenEnsemble("e.yaml"),
		s.givenResponds("lister", `{"items": ["a", "b"]}`),
		s.whenRuns(context.Background()),
	} {
		if err != nil {
			t.Fatalf("step %d: %v", i, err)
		}
	}
	if err := s.thenNoErrors(); err != nil {
		t.Fatal(err)
	}
	// 4 researcher, 1 + 2 summarize, 2 critic: 9 requests at 0.002.
	if got := model.Requests(); got != 9 {
		t.Fatalf("the model answered %d requests, want 9", got)
	}
	for _, tc := range []struct {
		name string
		err  error
		want string // "" passes
	}{
		{"called", s.thenCalledTool("researcher", "t.fail"), ""},
		{"called, by path", s.thenCalledTool("review/critic", "t.echo"), ""},
		{"called, an instance", s.thenCalledTool("summarize[1]", "t.fail"), ""},
		{"called, the fan-out's instances", s.thenCalledTool("summarize", "t.fail"), ""},
		{"not called, an instance", s.thenDidNotCallTool("summarize[0]", "t.fail"), ""},
		{"not called", s.thenDidNotCallTool("review/critic", "t.echo"),
			`agent "review/critic" called "t.echo" 1 time, want no call of it (agent "review/critic" called, in order: "t.echo")`},
		{"not called, never", s.thenCalledTool("summarize[0]", "t.echo"),
			`agent "summarize[0]" called no tool in its 1 execution, want a call of "t.echo"`},
		{"did not call, but did", s.thenDidNotCallTool("researcher", "t.echo"),
			`agent "researcher" called "t.echo" 2 times, want no call of it (agent "researcher" called, in order: "t.echo, t.env (failed), t.fail (failed), t.echo")`},
		{"in order", s.thenCalledInOrder("researcher", "t.echo, t.fail, t.echo"), ""},
		{"in order, with calls between", s.thenCalledInOrder("researcher", "t.env, t.echo"), ""},
		{"out of order", s.thenCalledInOrder("researcher", "t.fail, t.env"),
			`agent "researcher" called, in order: "t.echo, t.env (failed), t.fail (failed), t.echo", want calls of "t.fail, t.env" in that order (no call of "t.env" after its call of "t.fail")`},
		{"twice needs two calls", s.thenCalledInOrder("researcher", "t.fail, t.fail"),
			`(no call of "t.fail" after its call of "t.fail")`},
		{"a tool the agent lacks", s.thenCalledTool("researcher", "t.ech"),
			`agent "researcher" has no tool "t.ech" (its tools: t.echo, t.fail, t.env); did you mean "t.echo"?`},
		{"a server's tools, whole", s.thenDidNotCallTool("summarize", "t.block"), ""},
		{"an agent without tools", s.thenDidNotCallTool("lister", "t.echo"), `agent "lister" has no tools, so it cannot call "t.echo"`},
		{"an unknown agent", s.thenCalledTool("researcher2", "t.echo"), `has no agent "researcher2"`},
		{"requests", s.thenRequestsAtMost(9), ""},
		{"too many requests", s.thenRequestsAtMost(8),
			`the run made 9 model requests, want at most 8 (`},
		{"cost", s.thenCostAtMost("0.014"), ""}, // the child's profile has no pricing
		{"too costly", s.thenCostAtMost("0.01"), `the run cost 0.014 over 9 model requests, want at most 0.01 (researcher: 0.008; review: 0; summarize: 0.006)`},
		{"a cost that is no number", s.thenCostAtMost("cheap"), `the cost "cheap" is not a number`},
		{"took at most", s.thenTookAtMost("researcher", "10m"), ""},
		{"took too long", s.thenTookAtMost("researcher", "0s"), `agent "researcher" took `},
		{"a duration that is not one", s.thenTookAtMost("researcher", "5"), `the duration "5" is not a Go duration`},
	} {
		switch {
		case tc.want == "" && tc.err != nil:
			t.Errorf("%s: %v", tc.name, tc.err)
		case tc.want != "" && tc.err == nil:
			t.Errorf("%s: passed, want %q", tc.name, tc.want)
		case tc.want != "" && !strings.Contains(tc.err.Error(), tc.want):
			t.Errorf("%s:\n%v\nwant it to contain\n%s", tc.name, tc.err, tc.want)
		}
	}
	// The requests' count names each agent's.
	if err := s.thenRequestsAtMost(8); err == nil || !strings.Contains(err.Error(), "researcher: 4 model requests; review: 2 model requests; summarize: 3 model requests") {
		t.Errorf("requests by agent: %v", err)
	}
	// The tool calls are details of the records: conditions see them too.
	if err := s.thenExprTrue(`len(history[0].tool_calls) == 4 && history[0].tool_calls[2].failed`); err != nil {
		t.Error(err)
	}
}

func lastUser(r *modelRequest) string {
	for i := len(r.Messages) - 1; i >= 0; i-- {
		if r.Messages[i].Role == "user" {
			return r.Messages[i].Content
		}
	}
	return ""
}

// TestTrajectoryOfANondeterministicModel: a model that picks its tools at
// random from a seed; whatever it picked, the steps say what it did: the
// step that checks a call passes exactly when the server saw the tool
// offered and chosen.
func TestTrajectoryOfANondeterministicModel(t *testing.T) {
	t.Parallel()
	for seed := range uint64(6) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			t.Parallel()
			rng := rand.New(rand.NewPCG(seed, 26))
			var chose []string
			model := newScriptedModel(t, func(r *modelRequest) modelReply {
				if !strings.HasPrefix(r.System, "Research.") || len(r.ToolResults) >= 3 || rng.IntN(4) == 0 {
					return modelReply{Text: "done"}
				}
				tool := []string{"t__echo", "t__fail", "t__env"}[rng.IntN(3)]
				chose = append(chose, strings.Replace(tool, "__", ".", 1))
				return modelReply{Calls: []string{tool}}
			})
			dir := toolEnsemble(t, model.URL())
			s := NewScenario(dir, Options{LLM: llm.New(llm.Options{})})
			for i, err := range []error{s.givenEnsemble("e.yaml"), s.givenResponds("lister", `{"items": []}`), s.whenRuns(context.Background())} {
				if err != nil {
					t.Fatalf("step %d: %v", i, err)
				}
			}
			for _, tool := range []string{"t.echo", "t.fail", "t.env"} {
				called := slices.Contains(chose, tool)
				if err := s.thenCalledTool("researcher", tool); (err == nil) != called {
					t.Errorf("seed %d, chose %v: called %s: %v", seed, chose, tool, err)
				}
				if err := s.thenDidNotCallTool("researcher", tool); (err == nil) == called {
					t.Errorf("seed %d, chose %v: did not call %s: %v", seed, chose, tool, err)
				}
			}
			if len(chose) > 0 {
				if err := s.thenCalledInOrder("researcher", strings.Join(chose, ", ")); err != nil {
					t.Errorf("seed %d: %v", seed, err)
				}
			}
			reqs := model.Requests()
			if err := s.thenRequestsAtMost(reqs); err != nil {
				t.Error(err)
			}
			if err := s.thenRequestsAtMost(reqs - 1); err == nil || !strings.Contains(err.Error(), fmt.Sprintf("the run made %s", requestsText(reqs))) {
				t.Errorf("seed %d: %v", seed, err)
			}
		})
	}
}

// TestTrajectoryStepsInAFeature: the steps as a feature file writes them,
// run by Run against the model server.
func TestTrajectoryStepsInAFeature(t *testing.T) {
	t.Parallel()
	model := newScriptedModel(t, func(r *modelRequest) modelReply {
		if strings.HasPrefix(r.System, "Research.") {
			return callInTurn([]string{"t__echo"}, []string{"t__env"})(r)
		}
		return modelReply{Text: "fine"}
	})
	dir := toolEnsemble(t, model.URL())
	writeFiles(t, dir, map[string]string{"tools.feature": `Feature: trajectories
  Scenario: The researcher looks things up
    Given the ensemble "e.yaml"
    And agent "lister" responds "{\"items\": [\"a\"]}"
    When the ensemble runs
    Then agent "researcher" called tool "t.echo"
    And agent "researcher" did not call tool "t.fail"
    And agent "researcher" called tools in this order: "t.echo, t.env"
    And the run made at most 5 model requests
    And the run cost at most 0.008
    And agent "researcher" took at most 5m

  Scenario: Too few requests allowed
    Given the ensemble "e.yaml"
    And agent "lister" responds "{\"items\": [\"a\"]}"
    When the ensemble runs
    Then the run made at most 4 model requests
`})
	var out bytes.Buffer
	code, err := Run(RunOptions{Options: Options{LLM: llm.New(llm.Options{})}, Paths: []string{filepath.Join(dir, "tools.feature")}, Format: "pretty", NoColors: true, Output: &out, Stderr: io.Discard})
	if code != ExitFailed || err != nil {
		t.Fatalf("exit %d, %v\n%s", code, err, out.String())
	}
	for _, want := range []string{"2 scenarios (1 passed, 1 failed)", "the run made 5 model requests, want at most 4"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("the report lacks %q:\n%s", want, out.String())
		}
	}
}

// TestSpendStepsNeedWhatTheyMeasure: a cost with no priced profile, and
// the time of an agent that did not run, fail rather than pass on nothing.
func TestSpendStepsNeedWhatTheyMeasure(t *testing.T) {
	t.Parallel()
	s := NewScenario(t.TempDir(), Options{})
	if err := s.givenInlineEnsemble(&godog.DocString{Content: "name: free\nagents:\n  - {name: a, ask: \"?\"}\n  - {name: b, ask: \"?\", dependencies: [{agent_name: a, condition: \"false\"}]}\n"}); err != nil {
		t.Fatal(err)
	}
	if err := s.thenCostAtMost("1"); err == nil || !strings.Contains(err.Error(), "has not run yet") {
		t.Errorf("before the run: %v", err)
	}
	for i, err := range []error{s.givenResponds("a", "ok"), s.whenRuns(context.Background())} {
		if err != nil {
			t.Fatalf("step %d: %v", i, err)
		}
	}
	for _, tc := range []struct {
		name string
		err  error
		want string
	}{
		{"unpriced", s.thenCostAtMost("1"), "the run's cost cannot be checked: no model profile has pricing, so every request costs 0"},
		{"no requests", s.thenRequestsAtMost(0), ""},
		{"did not run", s.thenTookAtMost("b", "1s"), `agent "b" did not run, want it to take at most 1s`},
		{"an empty list", s.thenCalledInOrder("a", " "), "the list of tools is empty"},
	} {
		if tc.want == "" && tc.err != nil || tc.want != "" && (tc.err == nil || !strings.Contains(tc.err.Error(), tc.want)) {
			t.Errorf("%s: %v, want %q", tc.name, tc.err, tc.want)
		}
	}
}
