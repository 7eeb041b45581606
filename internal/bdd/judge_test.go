package bdd

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/cucumber/godog"

	"github.com/ensemble-run/ensemble/agent"
	"github.com/ensemble-run/ensemble/internal/cassette"
	"github.com/ensemble-run/ensemble/internal/fakemodel"
	"github.com/ensemble-run/ensemble/internal/opaque"
	"github.com/ensemble-run/ensemble/kinds/llm"
	"github.com/ensemble-run/ensemble/session"
)

const rubric = "Score the report from 1 to 5: 5 when it names the region and the growth, 1 when it names neither."

// judgedEnsemble is an ensemble whose writer (an LLM agent) writes a
// report, and whose model profile "small" is at modelURL.
func judgedEnsemble(t *testing.T, modelURL string) string {
	t.Helper()
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{"e.yaml": fmt.Sprintf(`name: judged
input: Sales figures for Q3
models:
  small: {provider: ollama, model: fake-model, base_url: %q}
agents:
  - name: writer
    model_profile: small
    prompt: Write the report.
  - name: editor
    model_profile: small
    prompt: Edit the report.
    dependencies: [writer]
`, modelURL)})
	return dir
}

// judgedScenario is a scenario of judgedEnsemble with the judge "quality"
// declared and the writer's and editor's replies injected.
func judgedScenario(t *testing.T, dir string, opts Options, replies ...string) *Scenario {
	t.Helper()
	s := NewScenario(dir, opts)
	steps := []error{
		s.givenEnsemble("e.yaml"),
		s.givenJudge("quality", "small", &godog.DocString{Content: rubric}),
		s.givenResponds("writer", "EMEA grew 12% in Q3."),
		s.givenResponds("editor", "Q3 was fine."),
	}
	for _, r := range replies {
		steps = append(steps, s.givenResponds("quality", r))
	}
	steps = append(steps, s.whenRuns(context.Background()))
	for i, err := range steps {
		if err != nil {
			t.Fatalf("step %d: %v", i, err)
		}
	}
	return s
}

func checkErr(t *testing.T, name string, err error, want string) {
	t.Helper()
	switch {
	case want == "" && err != nil:
		t.Errorf("%s: %v", name, err)
	case want != "" && err == nil:
		t.Errorf("%s: passed, want %q", name, want)
	case want != "" && !strings.Contains(err.Error(), want):
		t.Errorf("%s:\n%v\nwant it to contain\n%s", name, err, want)
	}
}

// TestJudgeAnsweredByInjectedReplies: a judge's replies are injected under
// its name, offline; each agent judged takes the next, a verdict is asked
// once per agent, a reply that fails the schema is repaired by the next,
// and a failed judgement says the score and the reason.
func TestJudgeAnsweredByInjectedReplies(t *testing.T) {
	t.Parallel()
	dir := judgedEnsemble(t, "http://127.0.0.1:9/v1")
	s := judgedScenario(t, dir, Options{GuardModels: true},
		`{"score": 5, "reason": "names EMEA and 12%"}`,
		`{"score": "two"}`, // fails the schema: the next reply repairs it
		`{"score": 2, "reason": "names no region"}`,
		`not JSON`, `still not JSON`)
	checkErr(t, "passes", s.thenJudgeScores(context.Background(), "quality", "writer", "5"), "")
	checkErr(t, "asked once: the same verdict", s.thenJudgeScores(context.Background(), "quality", "writer", "5.5"),
		`the judge "quality" scored agent "writer" 5, want at least 5.5; its reason: names EMEA and 12%`)
	checkErr(t, "repaired", s.thenJudgeScores(context.Background(), "quality", "editor", "3"),
		`the judge "quality" scored agent "editor" 2, want at least 3; its reason: names no region`)
	// The editor's verdict is kept; a fresh scenario runs out of repairs.
	s2 := judgedScenario(t, dir, Options{GuardModels: true}, `not JSON`, `still not JSON`)
	checkErr(t, "malformed after the repair", s2.thenJudgeScores(context.Background(), "quality", "writer", "1"),
		`the judge "quality" gave no score for agent "writer": agent "quality": injected response 2: output_schema needs JSON`)
	s3 := judgedScenario(t, dir, Options{GuardModels: true})
	checkErr(t, "no reply: no model either", s3.thenJudgeScores(context.Background(), "quality", "writer", "1"),
		`the judge "quality" has no injected reply and would call the real model; give it one: Given agent "quality" responds`)
	s4 := judgedScenario(t, dir, Options{GuardModels: true}, `{"score": 3, "reason": "ok"}`)
	checkErr(t, "one reply, two agents", s4.thenJudgeScores(context.Background(), "quality", "writer", "1"), "")
	checkErr(t, "one reply, two agents", s4.thenJudgeScores(context.Background(), "quality", "editor", "1"),
		`the judge "quality" has no injected reply left for agent "editor" (its earlier judgements took 1)`)
	for _, tc := range []struct {
		name string
		err  error
		want string
	}{
		{"unknown judge", s.thenJudgeScores(context.Background(), "qualty", "writer", "1"), `no judge "qualty" (the scenario's judges: quality); did you mean "quality"?`},
		{"unknown agent", s.thenJudgeScores(context.Background(), "quality", "writr", "1"), `has no agent "writr"`},
		{"a score that is no number", s.thenJudgeScores(context.Background(), "quality", "writer", "high"), `the score "high" is not a number`},
	} {
		checkErr(t, tc.name, tc.err, tc.want)
	}
}

// TestJudgeDeclarationErrors: the judge's profile must be the ensemble's,
// its name no agent's, its rubric given, and its replies after it.
func TestJudgeDeclarationErrors(t *testing.T) {
	t.Parallel()
	dir := judgedEnsemble(t, "http://127.0.0.1:9/v1")
	doc := &godog.DocString{Content: rubric}
	for _, tc := range []struct {
		name string
		step func(s *Scenario) error
		want string
	}{
		{"unknown profile", func(s *Scenario) error { return s.givenJudge("quality", "smal", doc) },
			`the judge "quality" uses model profile "smal", which the ensemble "judged" does not have (its profiles: small); did you mean "small"?`},
		{"an agent's name", func(s *Scenario) error { return s.givenJudge("writer", "small", doc) },
			`the judge "writer" has the name of an agent of the ensemble "judged": name it otherwise`},
		{"no rubric", func(s *Scenario) error { return s.givenJudge("quality", "small", &godog.DocString{Content: " \n"}) },
			`the judge "quality" needs its rubric in the doc string`},
		{"twice", func(s *Scenario) error {
			_ = s.givenJudge("quality", "small", doc)
			return s.givenJudge("quality", "small", doc)
		}, `the judge "quality" is declared twice`},
		{"replies first", func(s *Scenario) error {
			s.ens = nil // no ensemble yet: the reply cannot be checked
			_ = s.givenResponds("quality", `{"score": 1, "reason": "x"}`)
			return s.givenJudge("quality", "small", doc)
		}, `replies were given for "quality" before the judge was declared: declare the judge first`},
	} {
		s := NewScenario(dir, Options{})
		if err := s.givenEnsemble("e.yaml"); err != nil {
			t.Fatal(err)
		}
		checkErr(t, tc.name, tc.step(s), tc.want)
	}
	// A judge declared before the ensemble is checked when it judges.
	s := NewScenario(dir, Options{})
	for i, err := range []error{
		s.givenJudge("quality", "smal", doc),
		s.givenEnsemble("e.yaml"),
		s.givenResponds("writer", "x"), s.givenResponds("editor", "y"),
		s.whenRuns(context.Background()),
	} {
		if err != nil {
			t.Fatalf("step %d: %v", i, err)
		}
	}
	checkErr(t, "checked late", s.thenJudgeScores(context.Background(), "quality", "writer", "1"), `uses model profile "smal", which the ensemble "judged" does not have`)
}

// judgeModel is a model server whose writer and editor reply as the test
// says, and which judges by the rubric: 5 for a report that names EMEA,
// else 2; its first judgement reply is prose, which a repair turn fixes.
func judgeModel(t *testing.T, score func(user string) int) *scriptedModel {
	return newScriptedModel(t, func(r *modelRequest) modelReply {
		switch {
		case strings.HasPrefix(r.System, "Write"):
			return modelReply{Text: "EMEA grew 12% in Q3."}
		case strings.HasPrefix(r.System, "Edit"):
			return modelReply{Text: "Q3 was fine."}
		case !strings.HasPrefix(r.System, rubric):
			return modelReply{Text: "not a judge"}
		case len(r.Messages) == 2: // the system prompt and the question
			return modelReply{Text: "I would say it is good."}
		}
		user := r.Messages[1].Content
		return modelReply{Text: fmt.Sprintf(`{"score": %d, "reason": "scored %d"}`, score(user), score(user))}
	})
}

func byRegion(user string) int {
	if regexp.MustCompile(`\nBEGIN OUTPUT JUDGED-[0-9A-F]{16}\nEMEA`).MatchString(user) {
		return 5
	}
	return 2
}

// TestJudgeAnsweredByAModelServer: a judge asks its model with the rubric
// as its system prompt and the agent's input and output as the question;
// a reply that is not JSON gets a repair turn, as an output_schema's does.
func TestJudgeAnsweredByAModelServer(t *testing.T) {
	t.Parallel()
	model := judgeModel(t, byRegion)
	s := judgedRun(t, model.URL())
	checkErr(t, "the writer", s.thenJudgeScores(context.Background(), "quality", "writer", "4"), "")
	checkErr(t, "the editor", s.thenJudgeScores(context.Background(), "quality", "editor", "4"),
		`the judge "quality" scored agent "editor" 2, want at least 4; its reason: scored 2`)
	// Writer, editor, then two requests for each judgement.
	if got := model.Requests(); got != 6 {
		t.Fatalf("%d requests, want 6", got)
	}
	q := model.log[2]
	if !strings.HasPrefix(q.System, rubric) || !strings.Contains(q.System, `{"score": n, "reason": "..."}`) {
		t.Errorf("the judge's system prompt: %q", q.System)
	}
	if u := q.Messages[1].Content; !strings.Contains(u, `The agent "writer" was given`) || !regexp.MustCompile(`(?s)\nBEGIN GIVEN (JUDGED-[0-9A-F]{16})\n[^\n]*Sales figures for Q3[^\n]*\nEND GIVEN (JUDGED-[0-9A-F]{16})\n\nBEGIN OUTPUT (JUDGED-[0-9A-F]{16})\nEMEA grew 12% in Q3.\nEND OUTPUT (JUDGED-[0-9A-F]{16})$`).MatchString(u) {
		t.Errorf("the judge's question: %q", u)
	}
	if r := model.log[3]; len(r.Messages) != 4 || r.Messages[3].Role != "user" || !strings.Contains(r.Messages[3].Content, "output_schema") && !strings.Contains(r.Messages[3].Content, "JSON") {
		t.Errorf("no repair turn: %+v", r.Messages)
	}
	// The judge's requests are not the run's, but the scenario spent them
	// (test --max-requests counts them).
	checkErr(t, "the run's requests", s.thenRequestsAtMost(2), "")
	if u := s.Spent(); u.Requests != 6 {
		t.Fatalf("the scenario spent %d requests, want 6 (2 of the run, 4 of the judge)", u.Requests)
	}
}

// TestJudgeOfANondeterministicModel: a judge whose model scores at random
// from a seed; the step passes exactly when the score it gave is high
// enough, and a failure prints that score and its reason.
func TestJudgeOfANondeterministicModel(t *testing.T) {
	t.Parallel()
	for seed := range uint64(6) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			t.Parallel()
			rng := rand.New(rand.NewPCG(seed, 26))
			gave := 0
			model := judgeModel(t, func(string) int {
				if gave == 0 {
					gave = 1 + rng.IntN(5)
				}
				return gave
			})
			s := judgedRun(t, model.URL())
			err := s.thenJudgeScores(context.Background(), "quality", "writer", "3")
			if gave >= 3 {
				checkErr(t, "passes", err, "")
			} else {
				checkErr(t, "fails", err, fmt.Sprintf(`scored agent "writer" %d, want at least 3; its reason: scored %d`, gave, gave))
			}
		})
	}
}

// TestJudgeReplayedFromARecording: a judgement recorded against the model
// server replays from the scenario's recording, offline.
func TestJudgeReplayedFromARecording(t *testing.T) {
	t.Parallel()
	model := judgeModel(t, byRegion)
	dir := judgedEnsemble(t, model.URL())
	rec := filepath.Join(dir, "recording")
	// Record: the writer's and editor's replies and the judge's exchanges.
	s := NewScenario(dir, Options{LLM: llm.New(llm.Options{})})
	for i, err := range []error{
		s.givenEnsemble("e.yaml"),
		s.givenJudge("quality", "small", &godog.DocString{Content: rubric}),
		s.givenResponds("writer", "EMEA grew 12% in Q3."),
		s.givenResponds("editor", "Q3 was fine."),
		s.whenRuns(context.Background()),
	} {
		if err != nil {
			t.Fatalf("step %d: %v", i, err)
		}
	}
	c, err := cassette.Open(cassette.Options{Dir: rec, Mode: cassette.Record})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.judgement(context.Background(), s.judges["quality"], "writer", nil, func(o *session.Options) { o.Models.Recording = opaque.Make[agent.Recording](c) }); err != nil {
		t.Fatal(err)
	}
	before := model.Requests()
	writeFiles(t, dir, map[string]string{"judged.feature": `Feature: judged offline
  Scenario: The recorded judge scores the writer
    Given the ensemble "e.yaml"
    And the judge "quality" uses model profile "small" with the rubric:
      """
      ` + rubric + `
      """
    And agent "writer" responds "EMEA grew 12% in Q3."
    And agent "editor" responds "Q3 was fine."
    And the recording "recording"
    When the ensemble runs
    Then the judge "quality" scores agent "writer" at least 5

  Scenario: A judgement the recording lacks fails with the difference
    Given the ensemble "e.yaml"
    And the judge "quality" uses model profile "small" with the rubric:
      """
      ` + rubric + `
      """
    And agent "writer" responds "APAC shrank."
    And agent "editor" responds "Q3 was fine."
    And the recording "recording"
    When the ensemble runs
    Then the judge "quality" scores agent "writer" at least 1
`})
	var out bytes.Buffer
	code, err := Run(RunOptions{Options: Options{GuardModels: true}, Paths: []string{filepath.Join(dir, "judged.feature")}, NoColors: true, Output: &out, Stderr: io.Discard})
	if code != ExitFailed || err != nil {
		t.Fatalf("exit %d, %v\n%s", code, err, out.String())
	}
	for _, want := range []string{"2 scenarios (1 passed, 1 failed)", `the judge "quality" gave no score for agent "writer"`, "differs"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("the report lacks %q:\n%s", want, out.String())
		}
	}
	if model.Requests() != before {
		t.Errorf("the replay reached the model: %d requests, %d before", model.Requests(), before)
	}
}

// TestJudgeStepsInAFeature: the steps as a feature writes them, the judge
// answered by injected replies.
func TestJudgeStepsInAFeature(t *testing.T) {
	t.Parallel()
	dir := judgedEnsemble(t, "http://127.0.0.1:9/v1")
	writeFiles(t, dir, map[string]string{"judged.feature": `Feature: judged
  Background:
    Given the ensemble "e.yaml"
    And the judge "quality" uses model profile "small" with the rubric:
      """
      ` + rubric + `
      """
    And agent "writer" responds "EMEA grew 12% in Q3."
    And agent "editor" responds "Q3 was fine."

  Scenario: A good report
    Given agent "quality" responds:
      """
      {"score": 5, "reason": "names EMEA and 12%"}
      """
    When the ensemble runs
    Then the judge "quality" scores agent "writer" at least 4

  Scenario: A poor report
    Given agent "quality" responds "{\"score\": 2, \"reason\": \"names no region\"}"
    When the ensemble runs
    Then the judge "quality" scores agent "editor" at least 4
`})
	var out bytes.Buffer
	code, err := Run(RunOptions{Options: Options{GuardModels: true}, Paths: []string{filepath.Join(dir, "judged.feature")}, NoColors: true, Output: &out, Stderr: io.Discard})
	if code != ExitFailed || err != nil {
		t.Fatalf("exit %d, %v\n%s", code, err, out.String())
	}
	for _, want := range []string{"2 scenarios (1 passed, 1 failed)", `the judge "quality" scored agent "editor" 2, want at least 4; its reason: names no region`} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("the report lacks %q:\n%s", want, out.String())
		}
	}
}

// TestJudgeStopsWithTheTestRun: a live judge's request is cancelled with
// the test run (Ctrl-C, or an early stop that spares the runs under way):
// a judge that waits on a slow model must not keep the test run, or its
// spending, going.
func TestJudgeStopsWithTheTestRun(t *testing.T) {
	t.Parallel()
	asked := make(chan struct{}, 1)
	release := make(chan struct{})
	srv := fakemodel.New(t, func(r fakemodel.Request) fakemodel.Reply {
		select { // the judge's model answers only when its request is cancelled
		case asked <- struct{}{}:
		default:
		}
		select {
		case <-r.Context.Done():
		case <-release:
		}
		return fakemodel.Reply{Status: http.StatusServiceUnavailable, Error: "gone"}
	})
	t.Cleanup(func() { close(release) })
	dir := judgedEnsemble(t, srv.Root())
	writeFiles(t, dir, map[string]string{"judged.feature": `Feature: judged
  Scenario: A good report
    Given the ensemble "e.yaml"
    And the judge "quality" uses model profile "small" with the rubric:
      """
      ` + rubric + `
      """
    And agent "writer" responds "EMEA grew 12% in Q3."
    And agent "editor" responds "Q3 was fine."
    When the ensemble runs
    Then the judge "quality" scores agent "writer" at least 4
`})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan int, 1)
	go func() {
		code, _ := Run(RunOptions{Options: Options{LLM: llm.New(llm.Options{}), LiveAll: true}, Paths: []string{filepath.Join(dir, "judged.feature")},
			NoColors: true, Output: io.Discard, Stderr: io.Discard, Context: ctx})
		done <- code
	}()
	select {
	case <-asked:
	case <-time.After(time.Minute):
		t.Fatal("the judge never asked its model")
	}
	cancel()
	select {
	case code := <-done:
		if code != ExitCancelled { // Ctrl-C: the code of a cancelled run
			t.Errorf("exit %d, want %d", code, ExitCancelled)
		}
	case <-time.After(time.Minute):
		t.Fatal("the test run was cancelled, but its judge still waits on its model")
	}
}

// judgedRun is a scenario of judgedEnsemble whose models answer at url,
// with the judge "quality" of the rubric, after its run.
func judgedRun(t *testing.T, url string) *Scenario {
	t.Helper()
	s := NewScenario(judgedEnsemble(t, url), Options{LLM: llm.New(llm.Options{})})
	for i, err := range []error{
		s.givenEnsemble("e.yaml"),
		s.givenJudge("quality", "small", &godog.DocString{Content: rubric}),
		s.whenRuns(context.Background()),
	} {
		if err != nil {
			t.Fatalf("step %d: %v", i, err)
		}
	}
	return s
}
