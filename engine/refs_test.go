package engine_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/ensemble-run/ensemble/engine"
	"github.com/ensemble-run/ensemble/internal/responses"
	"github.com/ensemble-run/ensemble/state"
)

// A delivered output is recorded once: the consumer's input_data refers to
// the execution that produced it, conditions still read the value itself,
// and so does a run resumed from the saved JSON.
func TestDependenciesByReference(t *testing.T) {
	t.Parallel()
	e := build(
		agent("a", 2),
		agent("b", 2, "a"),
		// c runs once b's input, as conditions see it, held a's value.
		agent("c", 1, `b|history[len(history)-1].input_data.dependencies.a.n == 2`),
	)
	e.Agents[0].Dependencies = nil
	resp := responses.NewResponses()
	long := strings.Repeat("long enough to be worth a reference ", 4)
	resp.Add("a", map[string]any{"n": 1.0, "text": long})
	resp.Add("b", "b1")
	resp.Add("b", "b2")
	resp.Add("c", "done")
	run := responses.Injected(resp, nil)

	res := engine.New(e, "x", engine.Options{Runner: run}).Run(context.Background())
	if got := order(res); strings.Join(got, " ") != "1:a 2:b" {
		// a runs once (no dependencies), b once; c's condition wants n == 2.
		t.Fatalf("order %v", got)
	}
	rec := res.ConversationHistory[1]
	b, _ := json.Marshal(rec.InputData)
	if !strings.Contains(string(b), `"dependencies":{"a":{"output_of":{"agent_name":"a","execution":1}}}`) {
		t.Fatalf("b's input_data = %s, want a reference to a's execution 1", b)
	}
	if got := state.ResolveInput(res.ConversationHistory, rec.InputData); !strings.Contains(mustJSON(t, got), `"a":{"n":1,"text":"long enough`) {
		t.Fatalf("resolved input = %s", mustJSON(t, got))
	}
}

// An output shorter than a reference is written in full.
func TestShortDependenciesInline(t *testing.T) {
	t.Parallel()
	e := build(agent("a", 1), agent("b", 1, "a"))
	resp := responses.NewResponses()
	resp.Add("a", map[string]any{"n": 1.0, "list": []any{"x", true}})
	resp.Add("b", "b")
	res := engine.New(e, "", engine.Options{Runner: responses.Injected(resp, nil)}).Run(context.Background())
	if got := mustJSON(t, res.ConversationHistory[1].InputData); !strings.Contains(got, `"dependencies":{"a":{"list":["x",true],"n":1}}`) {
		t.Fatalf("b's input_data = %s", got)
	}
}

func TestConditionsReadReferencedInputs(t *testing.T) {
	t.Parallel()
	e := build(agent("a", 1), agent("b", 1, "a"), agent("c", 1, `b|history[1].input_data.dependencies.a.n == 7`))
	resp := responses.NewResponses()
	resp.Add("a", map[string]any{"n": 7.0, "text": strings.Repeat("x", 200)})
	resp.Add("b", "b")
	resp.Add("c", "c")
	run := responses.Injected(resp, nil)
	r := engine.New(e, "", engine.Options{Runner: run})
	for range 2 {
		if reason := r.Step(context.Background()); reason != "" {
			t.Fatalf("ended early: %s", reason)
		}
	}
	// Save after two turns and resume from the JSON: the reference is a
	// plain map now, and must resolve the same.
	path := t.TempDir() + "/run.state"
	file := r.File("")
	file.Ensemble.Path, file.Ensemble.SHA256 = "/e.yaml", strings.Repeat("0", 64)
	if err := state.Save(path, file); err != nil {
		t.Fatal(err)
	}
	f, err := state.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	res := engine.FromFile(e, f, engine.Options{Runner: run}).Run(context.Background())
	if got := strings.Join(order(res), " "); got != "1:a 2:b 3:c" || len(res.Warnings) > 0 {
		t.Fatalf("order %s, warnings %v", got, res.Warnings)
	}
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// A short output that has the shape of a reference is referenced anyway:
// written in full it would be read as a reference to another execution.
func TestRefShapedOutputIsReferenced(t *testing.T) {
	t.Parallel()
	e := build(agent("x", 1), agent("a", 1, "x"), agent("b", 1, "a"),
		agent("c", 1, `b|history[2].input_data.dependencies.a.output_of.agent_name == "x"`))
	fake := map[string]any{"output_of": map[string]any{"agent_name": "x", "execution": 1.0}}
	run := responses.Injected(func() *responses.Responses {
		r := responses.NewResponses()
		r.Add("x", "x's own output")
		r.Add("a", fake)
		r.Add("b", "b")
		r.Add("c", "c")
		return r
	}(), nil)
	res := engine.New(e, "", engine.Options{Runner: run}).Run(context.Background())
	if got := mustJSON(t, res.ConversationHistory[2].InputData); !strings.Contains(got, `"a":{"output_of":{"agent_name":"a","execution":1}}`) {
		t.Fatalf("b's input_data = %s, want a reference to a's execution", got)
	}
	if got := strings.Join(order(res), " "); got != "1:x 2:a 3:b 4:c" {
		t.Fatalf("order %s: conditions did not see a's real output", got)
	}
}
