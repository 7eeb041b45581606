package bdd

import (
	"bytes"
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

	"github.com/ensemble-run/ensemble/agent"
	"github.com/ensemble-run/ensemble/ensemble"
	"github.com/ensemble-run/ensemble/kinds"
	"github.com/ensemble-run/ensemble/kinds/ask"
	"github.com/ensemble-run/ensemble/kinds/script"
)

// A reviewer loop driven by simulators: reject then approve completes
// after two asks (testdata/simulator/review.feature).
func TestSimulatorFeature(t *testing.T) {
	t.Parallel()
	var out, stderr bytes.Buffer
	code, err := Run(RunOptions{Paths: []string{filepath.Join("testdata", "simulator", "review.feature")}, Format: "pretty", NoColors: true, Output: &out, Stderr: &stderr})
	if code != ExitPassed || err != nil {
		t.Fatalf("exit %d, %v\n%s\n%s", code, err, out.String(), stderr.String())
	}
	if !strings.Contains(out.String(), "3 scenarios (3 passed)") {
		t.Errorf("not every scenario passed:\n%s", out.String())
	}
	if strings.Contains(stderr.String(), "simulated people") {
		t.Errorf("policies made model requests:\n%s", stderr.String())
	}
}

// personaModel is a fake OpenAI chat completions server: every reply is
// reject, 10 prompt and 5 completion tokens; it keeps the requests.
type personaModel struct {
	srv      *httptest.Server
	mu       sync.Mutex
	requests []map[string]any
}

func newPersonaModel(t *testing.T) *personaModel {
	m := &personaModel{}
	m.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req map[string]any
		body, _ := io.ReadAll(io.LimitReader(r.Body, 1<<20))
		if r.URL.Path != "/v1/chat/completions" || r.Header.Get("Authorization") != "Bearer test-key" || json.Unmarshal(body, &req) != nil {
			http.Error(w, `{"error": {"message": "bad request"}}`, http.StatusBadRequest)
			return
		}
		m.mu.Lock()
		m.requests = append(m.requests, req)
		m.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{
			"id": "c1", "object": "chat.completion", "created": 1, "model": "persona",
			"choices": []any{map[string]any{"index": 0, "finish_reason": "stop", "message": map[string]any{"role": "assistant", "content": "reject"}}},
			"usage":   map[string]any{"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
		})
	}))
	t.Cleanup(m.srv.Close)
	return m
}

// personaFiles are review.yaml with a priced model profile at url, and a
// feature whose reviewer is a simulated person who gives up after 2
// answers.
func personaFiles(url string) map[string]string {
	return map[string]string{
		"e.yaml": `name: persona-review
input: "Release notes of 1.2"
models:
  small:
    provider: openai
    model: persona
    base_url: ` + url + `/v1
    api_key_env: PERSONA_KEY
    pricing: {input_per_million: 1000000, output_per_million: 2000000}
agents:
  - name: brief
    script: scripts/brief.sh
  - name: writer
    script: scripts/brief.sh
    conversation: {max_turns: 5}
    dependencies:
      - brief
      - agent_name: reviewer
        requires_all: false
        condition: 'context.reviewer == "reject"'
  - name: reviewer
    ask: "Publish this draft? Answer approve or reject."
    conversation: {max_turns: 5}
    dependencies: [writer]
conversation_limits: {max_requests: 1}
`,
		"scripts/brief.sh": "#!/bin/sh\necho draft\n",
		"persona.feature": `Feature: A simulated person
  Scenario: The reviewer gives up
    Given the ensemble "e.yaml"
    And ask agent "reviewer" is answered by a simulated person with model profile "small", the goal "Publish notes that name every new flag" and at most 2 answers
    When the ensemble runs
    Then the exit code is 1
    And agent "reviewer" ran 3 times
    And agent "reviewer" failed with an error containing "the simulated person gave up after 2 answers"
    And the run made at most 0 model requests
    And the run cost at most 0
    And the simulated people made 2 model requests
`,
	}
}

// A simulated person is a model behind the real wire format; its turn cap
// fails the ask after it, and its requests stay out of the run's usage.
func TestSimulatedPerson(t *testing.T) {
	t.Parallel()
	m := newPersonaModel(t)
	dir := writeTempFiles(t, personaFiles(m.srv.URL))
	if err := os.Chmod(filepath.Join(dir, "scripts/brief.sh"), 0o755); err != nil {
		t.Fatal(err)
	}
	lookup := func(k string) (string, bool) {
		if k == "PERSONA_KEY" {
			return "test-key", true
		}
		return "", false
	}
	live := kinds.Builtin().Runner(&agent.Host{LookupEnv: lookup}, nil)
	opts := Options{LookupEnv: lookup, LLM: live, Simulate: live.Simulator(), GuardModels: true}
	var out, stderr bytes.Buffer
	code, err := Run(RunOptions{Options: opts, Paths: []string{filepath.Join(dir, "persona.feature")}, Format: "pretty", NoColors: true, Output: &out, Stderr: &stderr})
	if code != ExitPassed || err != nil {
		t.Fatalf("exit %d, %v\n%s\n%s", code, err, out.String(), stderr.String())
	}
	if want := "simulated people: 2 model requests, 30 tokens, cost 40 (apart from the runs' usage)"; !strings.Contains(stderr.String(), want) {
		t.Errorf("the test run does not report its simulated people (%s):\n%s", want, stderr.String())
	}
	m.mu.Lock()
	reqs := m.requests
	m.mu.Unlock()
	if len(reqs) != 2 {
		t.Fatalf("the model got %d requests, want 2 (the third ask gives up without one)", len(reqs))
	}
	msgs, _ := reqs[0]["messages"].([]any)
	if len(msgs) < 2 {
		t.Fatalf("the first request has messages %v", reqs[0]["messages"])
	}
	system, _ := msgs[0].(map[string]any)["content"].(string)
	user, _ := msgs[len(msgs)-1].(map[string]any)["content"].(string)
	if !strings.Contains(system, "Publish notes that name every new flag") || !strings.Contains(user, "Publish this draft? Answer approve or reject.") {
		t.Errorf("the persona's request does not carry its goal and the question:\nsystem: %s\nuser: %s", system, user)
	}
	// The second request continues the person's conversation.
	if msgs2, _ := reqs[1]["messages"].([]any); len(msgs2) <= len(msgs) {
		t.Errorf("the second request has %d messages, the first %d: the person's memory is lost", len(msgs2), len(msgs))
	}
}

// With repeats, the simulated people's requests are JUnit properties of
// the scenario, and the run's own usage (a baseline's samples) leaves them
// out.
func TestSimulatedPersonJUnit(t *testing.T) {
	t.Parallel()
	m := newPersonaModel(t)
	dir := writeTempFiles(t, personaFiles(m.srv.URL))
	if err := os.Chmod(filepath.Join(dir, "scripts/brief.sh"), 0o755); err != nil {
		t.Fatal(err)
	}
	lookup := func(k string) (string, bool) { return "test-key", k == "PERSONA_KEY" }
	live := kinds.Builtin().Runner(&agent.Host{LookupEnv: lookup}, nil)
	opts := Options{LookupEnv: lookup, LLM: live, Simulate: live.Simulator(), GuardModels: true}
	var out, stderr bytes.Buffer
	code, err := Run(RunOptions{Options: opts, Paths: []string{filepath.Join(dir, "persona.feature")}, Format: "junit", NoColors: true,
		Output: &out, Stderr: &stderr, Repeats: Repeats{Repeat: 2, Concurrency: 1}})
	if code != ExitPassed || err != nil {
		t.Fatalf("exit %d, %v\n%s\n%s", code, err, out.String(), stderr.String())
	}
	for _, want := range []string{
		`<property name="The reviewer gives up: simulator requests" value="4"></property>`,
		`<property name="The reviewer gives up: simulator tokens" value="60"></property>`,
		`<property name="The reviewer gives up: simulator cost" value="80"></property>`,
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("the JUnit report lacks %s:\n%s", want, out.String())
		}
	}
}

// formKind asks a person for an answer of a schema: an ask agent whose
// output_schema the ask kind itself would refuse.
type formKind struct{ ask.Kind }

func (formKind) String() string { return "form" }

func (k formKind) Decode(f *ensemble.Fields, a *ensemble.Agent) { k.Kind.Decode(f, a) }

// The Given steps refuse what cannot work, naming the agent: a value the
// agent cannot take (checked at once when the ensemble is loaded, else
// when it runs), an agent that asks no one, a second simulator, injected
// responses beside one.
func TestSimulatorGivenChecks(t *testing.T) {
	t.Parallel()
	dir := writeTempFiles(t, map[string]string{"e.yaml": `name: forms
models:
  small: {provider: openai, model: none, base_url: "http://127.0.0.1:9/v1"}
agents:
  - name: draft
    script: scripts/none.sh
  - name: reviewer
    ask: "Approve?"
    output_schema:
      type: object
      properties: {approved: {type: boolean}}
      required: [approved]
    dependencies: [draft]
`, "scripts/none.sh": "#!/bin/sh\necho draft\n"})
	reg := kinds.New()
	reg.Register(script.Kind{})
	reg.Register(formKind{})
	opts := Options{Kinds: reg}
	loaded := func() *Scenario {
		s := NewScenario(dir, opts)
		if err := s.givenEnsemble("e.yaml"); err != nil {
			t.Fatal(err)
		}
		return s
	}
	for _, c := range []struct {
		name string
		step func(s *Scenario) error
		want string
	}{
		{"a value off the schema", func(s *Scenario) error {
			return s.givenSimulatorPolicy("reviewer", `{\"approved\": false} then {\"approved\": \"yes\"}`)
		}, `ask agent "reviewer" cannot take the simulator's value 2, {"approved":"yes"}: the output does not match output_schema: at '/approved'`},
		{"bare text for an object", func(s *Scenario) error { return s.givenSimulatorPolicy("reviewer", "reject then approve") },
			`ask agent "reviewer" cannot take the simulator's value 1, "reject"`},
		{"a script agent", func(s *Scenario) error { return s.givenSimulatorPolicy("draft", "always yes") },
			`agent "draft" is a script agent, not an ask agent`},
		{"an unknown agent", func(s *Scenario) error { return s.givenSimulatorPolicy("reviewr", "always yes") },
			`has no agent "reviewr"`},
		{"a bad policy", func(s *Scenario) error { return s.givenSimulatorPolicy("reviewer", "approve") },
			`ask agent "reviewer": the simulator "approve" is one value`},
		{"twice", func(s *Scenario) error {
			if err := s.givenSimulatorPolicy("reviewer", `always {\"approved\": true}`); err != nil {
				return err
			}
			return s.givenSimulatedPerson("reviewer", "small", "approve", 2)
		}, `ask agent "reviewer" is already answered by a simulator`},
		{"an unknown profile", func(s *Scenario) error { return s.givenSimulatedPerson("reviewer", "big", "approve", 2) },
			`with model profile "big", but the ensemble "forms" has no such profile`},
		{"no goal", func(s *Scenario) error { return s.givenSimulatedPerson("reviewer", "small", " ", 2) },
			`ask agent "reviewer": the simulated person's goal is empty`},
		{"no answers", func(s *Scenario) error { return s.givenSimulatedPerson("reviewer", "small", "approve", 0) },
			`must give at least 1 answer`},
		{"injected responses too", func(s *Scenario) error {
			if err := s.givenResponds("reviewer", `{"approved": true}`); err != nil {
				return err
			}
			return s.givenSimulatorPolicy("reviewer", `always {\"approved\": true}`)
		}, `ask agent "reviewer" has both injected responses and a simulator`},
	} {
		err := c.step(loaded())
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want an error containing %s", c.name, err, c.want)
		}
	}
	// Before the ensemble is loaded, the checks wait for it.
	s := NewScenario(dir, opts)
	if err := s.givenSimulatorPolicy("reviewer", "reject then approve"); err != nil {
		t.Fatal(err)
	}
	if err := s.givenEnsemble("e.yaml"); err == nil || !strings.Contains(err.Error(), `cannot take the simulator's value 1, "reject"`) {
		t.Errorf("the ensemble step after an unchecked simulator: %v", err)
	}
	// Responses given after the simulator fail the run.
	s = loaded()
	if err := s.givenSimulatorPolicy("reviewer", `always {\"approved\": true}`); err != nil {
		t.Fatal(err)
	}
	if err := s.givenResponds("reviewer", `{"approved": true}`); err != nil {
		t.Fatal(err)
	}
	if err := s.whenRuns(context.Background()); err == nil || !strings.Contains(err.Error(), "has both injected responses and a simulator") {
		t.Errorf("the run of an agent with responses and a simulator: %v", err)
	}
	// A value the schema takes answers the form.
	s = loaded()
	if err := s.givenSimulatorPolicy("reviewer", `{\"approved\": false} then {\"approved\": true}`); err != nil {
		t.Fatal(err)
	}
	if err := s.whenRuns(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := s.thenOutputIs("reviewer", `{"approved":false}`); err != nil {
		t.Error(err)
	}
}

// A child ensemble's ask agent, named by its path, is answered by its
// simulator in each run of the child (a child's run cannot wait).
func TestSimulatorOfAChildsAskAgent(t *testing.T) {
	t.Parallel()
	dir := writeTempFiles(t, map[string]string{
		"e.yaml": `name: parent
agents:
  - name: start
    script: scripts/s.sh
  - name: review
    ensemble: child.yaml
    output: approve
    conversation: {max_turns: 3}
    dependencies:
      - start
      - agent_name: again
        requires_all: false
  - name: again
    script: scripts/s.sh
    conversation: {max_turns: 3}
    dependencies:
      - agent_name: review
        condition: 'context.review != "yes"'
`,
		"scripts/s.sh": "#!/bin/sh\necho go\n",
		"child.yaml":   "name: child\nagents:\n  - name: approve\n    ask: \"Approve?\"\n",
	})
	s := NewScenario(dir, Options{})
	if err := s.givenEnsemble("e.yaml"); err != nil {
		t.Fatal(err)
	}
	if err := s.givenSimulatorPolicy("review/approve", "no then yes"); err != nil {
		t.Fatal(err)
	}
	if err := s.whenRuns(context.Background()); err != nil {
		t.Fatal(err)
	}
	for i, err := range []error{
		s.thenReason("completed"),
		s.thenRanTimes("review", 2),
		s.thenRanTimes("review/approve", 2),
		s.thenOutputIs("review", "yes"),
	} {
		if err != nil {
			t.Errorf("check %d: %v", i, err)
		}
	}
}
