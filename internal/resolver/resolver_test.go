package resolver

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/ensemble-run/ensemble/ensemble"
	"github.com/ensemble-run/ensemble/state"
)

// seq is a whole run: the agents ready in each turn, until nothing is.
func TestSequences(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		e    *ensemble.Ensemble
		want []string
	}{
		{"no deps runs once", ens(agent("a")), []string{"a"}},
		{"no deps runs once despite max_turns", ens(agent("a", maxTurns(5))), []string{"a"}},
		{"independent agents run together", ens(agent("a"), agent("b"), agent("c")), []string{"a,b,c"}},
		{"chain", ens(agent("a"), agent("b", deps(req("a"))), agent("c", deps(req("b")))), []string{"a", "b", "c"}},
		{"file order within a turn", ens(agent("z"), agent("c", deps(req("z"))), agent("b", deps(req("z")))), []string{"z", "c,b"}},
		{"diamond waits for every required edge",
			ens(agent("a"), agent("b", deps(req("a"))), agent("c", deps(req("a"))), agent("d", deps(req("c"), req("b"))), agent("x", deps(req("b"), req("d")))),
			[]string{"a", "b,c", "d", "x"}},
		{"long branch: the join waits",
			ens(agent("a"), agent("b", deps(req("a"))), agent("c", deps(req("b"))), agent("j", deps(req("a"), req("c")))),
			[]string{"a", "b", "c", "j"}},
		{"optional never blocks",
			ens(agent("a"), agent("never", deps(req("missing"))), agent("d", deps(req("a"), opt("never")))),
			[]string{"a", "d"}},
		{"optional can trigger again",
			ens(agent("a"), agent("b", deps(req("a"))), agent("d", maxTurns(5), deps(req("a"), opt("b")))),
			[]string{"a", "b,d", "d"}},
		{"only optional deps: runs when any produced, again for each new output",
			ens(agent("a"), agent("b", deps(req("a"))), agent("e", maxTurns(5), deps(opt("a"), opt("b")))),
			[]string{"a", "b,e", "e"}},
		{"only optional deps, none produced: never runs",
			ens(agent("a"), agent("e", deps(opt("ghost")))), []string{"a"}},
		// A join inside a loop: synth needs coder and critic. With the default
		// trigger (any), a new coder output pairs with the previous critique;
		// with trigger: all, synth waits until both are new.
		{"join in a loop, trigger any: stale pairing",
			ens(agent("start"), agent("coder", maxTurns(3), deps(req("start"), opt("critic"))), agent("critic", maxTurns(3), deps(req("coder"))),
				agent("synth", maxTurns(3), deps(req("coder"), req("critic")))),
			[]string{"start", "coder", "critic", "coder,synth", "critic,synth", "coder,synth", "critic"}},
		{"join in a loop, trigger all: waits for both",
			ens(agent("start"), agent("coder", maxTurns(3), deps(req("start"), opt("critic"))), agent("critic", maxTurns(3), deps(req("coder"))),
				agent("synth", maxTurns(3), triggerAll(), deps(req("coder"), req("critic")))),
			[]string{"start", "coder", "critic", "coder,synth", "critic", "coder,synth", "critic", "synth"}},
		{"trigger all: a stale required edge blocks, even with a fresh optional one",
			ens(agent("a"), agent("b", deps(req("a"))), agent("j", maxTurns(5), triggerAll(), deps(req("a"), opt("b")))),
			[]string{"a", "b,j"}},
		{"unknown dependency never satisfied", ens(agent("a", deps(req("ghost")))), nil},
		{"max_turns 0 means the default, 1", ens(agent("a", maxTurns(0))), []string{"a"}},
		{"loop bounded by max_turns",
			ens(agent("src"), agent("ping", maxTurns(3), deps(req("src"), opt("pong"))), agent("pong", maxTurns(10), deps(req("ping")))),
			[]string{"src", "ping", "pong", "ping", "pong", "ping", "pong"}},
		{"loop bounded by max_agent_executions",
			func() *ensemble.Ensemble {
				e := ens(agent("src"), agent("ping", maxTurns(10), deps(req("src"), opt("pong"))), agent("pong", maxTurns(10), deps(req("ping"))))
				e.Limits.MaxAgentExecutions = map[string]int{"pong": 2}
				return e
			}(),
			[]string{"src", "ping", "pong", "ping", "pong", "ping"}},
		{"max_agent_executions below max_turns of a no-deps agent",
			func() *ensemble.Ensemble {
				e := ens(agent("a", maxTurns(3)), agent("b"))
				e.Limits.MaxAgentExecutions = map[string]int{"a": 0}
				return e
			}(),
			[]string{"b"}},
		{"loop bounded by an optional edge's max_executions",
			ens(agent("src"), agent("ping", maxTurns(10), deps(req("src"), maxExec(opt("pong"), 2))), agent("pong", maxTurns(10), deps(req("ping")))),
			[]string{"src", "ping", "pong", "ping", "pong", "ping", "pong"}},
		{"a spent required edge blocks",
			ens(agent("src"), agent("ping", maxTurns(10), deps(req("src"), opt("pong"))), agent("pong", maxTurns(10), deps(maxExec(req("ping"), 2)))),
			[]string{"src", "ping", "pong", "ping", "pong", "ping"}},
		{"state_key does not change what is counted",
			ens(agent("x", stateKey("extracted")), agent("y", deps(when(req("x"), "context.extracted != nil && context.x == nil")))),
			[]string{"x", "y"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			w := newSim(t, tt.e)
			got := w.runAll(50, nil)
			if !slices.Equal(got, tt.want) {
				t.Fatalf("turns = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestDeliveredEdges(t *testing.T) {
	t.Parallel()
	e := ens(
		agent("a"),
		agent("b", deps(req("a"))),
		agent("d", maxTurns(5), deps(req("a"), opt("b"), opt("c"))),
		agent("c", deps(req("b"))),
	)
	w := newSim(t, e)
	w.turn("a", nil)
	w.turn("b,d", nil)
	w.delivered("d", []string{"a"}, []string{"a"})
	w.turn("d,c", nil) // b's output is new to d; a's is delivered again, not fresh
	w.delivered("d", []string{"a", "b"}, []string{"b"})
	w.delivered("c", []string{"b"}, []string{"b"})
	w.turn("d", nil)
	w.delivered("d", []string{"a", "b", "c"}, []string{"c"})
	w.done()
	if es := w.s.Edge("d", "a"); es.Triggered != 1 || es.Consumed != 1 {
		t.Fatalf("d←a = %+v, want triggered 1 (only when fresh), consumed 1", *es)
	}
	if es := w.s.Edge("d", "b"); es.Triggered != 1 || es.Consumed != 1 {
		t.Fatalf("d←b = %+v", *es)
	}
}

func TestFreshnessAndConsumption(t *testing.T) {
	t.Parallel()
	t.Run("does not re-run on the same inputs", func(t *testing.T) {
		t.Parallel()
		w := newSim(t, ens(agent("a"), agent("b", maxTurns(10), deps(req("a")))))
		w.turn("a", nil)
		w.turn("b", nil)
		w.done()
	})
	t.Run("a failed execution consumes its inputs", func(t *testing.T) {
		t.Parallel()
		w := newSim(t, ens(agent("a"), agent("b", maxTurns(10), deps(req("a"))), agent("c", deps(req("b")))))
		w.turn("a", nil)
		w.turn("b", map[string]any{"b": failed})
		w.done() // b is not retried; c never got an output
		if w.s.Executions("b") != 1 || w.s.Outputs("b") != 0 {
			t.Fatalf("counts: %v %v", w.s.ExecutionCounts(), w.s.Contents().OutputCount)
		}
	})
	t.Run("a failed dependency produces nothing new", func(t *testing.T) {
		t.Parallel()
		w := newSim(t, ens(agent("src"), agent("ping", maxTurns(10), deps(req("src"), opt("pong"))), agent("pong", maxTurns(10), deps(req("ping")))))
		w.turn("src", nil)
		w.turn("ping", nil)
		w.turn("pong", map[string]any{"pong": failed})
		w.done()
	})
	t.Run("an output produced in the same turn stays fresh", func(t *testing.T) {
		t.Parallel()
		// b consumes a's first output in turn 3 while a produces its second.
		e := ens(agent("tick"), agent("a", maxTurns(2), deps(opt("tick"), opt("b"))), agent("b", maxTurns(5), deps(req("a"))))
		w := newSim(t, e)
		w.turn("tick", nil)
		w.turn("a", nil)
		w.turn("b", nil)
		w.turn("a", nil) // b's output triggers a
		w.turn("b", nil) // a's second output
		w.done()
	})
	t.Run("consume records the output the agent was given", func(t *testing.T) {
		t.Parallel()
		w := newSim(t, ens(agent("a", maxTurns(5)), agent("b", maxTurns(5), deps(req("a")))))
		w.turn("a", nil)
		ready := w.resolve()
		if got := names(ready); !slices.Equal(got, []string{"b"}) {
			t.Fatalf("ready = %v", got)
		}
		// The dependency produced again before the engine committed b.
		w.s.SetOutput("a", "a", "a again")
		consumed(w.s, ready[0])
		if es := w.s.Edge("b", "a"); es.Consumed != 1 || es.Triggered != 1 {
			t.Fatalf("b←a = %+v, want consumed 1", *es)
		}
		w.s.CountExecution("b")
		if got := names(w.resolve()); !slices.Equal(got, []string{"b"}) {
			t.Fatalf("a's second output is fresh for b: ready = %v", got)
		}
	})
	t.Run("Resolve does not modify the state", func(t *testing.T) {
		t.Parallel()
		w := newSim(t, ens(agent("a", maxTurns(2)), agent("b", deps(req("a"), when(opt("a2"), "true"))), agent("a2")))
		w.turn("a,a2", nil)
		w.request("a", "a", nil)
		before, err := json.Marshal(w.s)
		if err != nil {
			t.Fatal(err)
		}
		for i := 0; i < 3; i++ {
			if got := names(w.resolve()); !slices.Equal(got, []string{"a", "b"}) {
				t.Fatalf("ready = %v", got)
			}
		}
		if after, _ := json.Marshal(w.s); string(after) != string(before) {
			t.Fatalf("state changed:\n%s\n%s", before, after)
		}
	})
}

func TestConditions(t *testing.T) {
	t.Parallel()
	t.Run("a false optional edge is neither delivered nor a trigger", func(t *testing.T) {
		t.Parallel()
		e := ens(agent("a"), agent("b", deps(req("a"))), agent("d", maxTurns(5), deps(req("a"), when(opt("b"), "context.b != 'no'"))))
		w := newSim(t, e)
		w.turn("a", nil)
		w.turn("b,d", map[string]any{"b": "no"})
		w.delivered("d", []string{"a"}, []string{"a"})
		w.done() // b's output is fresh, but its edge is false
	})
	t.Run("a required edge with a false condition blocks", func(t *testing.T) {
		t.Parallel()
		e := ens(agent("a"), agent("b"), agent("d", deps(req("a"), when(req("b"), "context.b == 'yes'"))))
		w := newSim(t, e)
		w.turn("a,b", map[string]any{"b": "no"})
		w.done()
	})
	t.Run("a condition that becomes true later", func(t *testing.T) {
		t.Parallel()
		e := ens(agent("a", maxTurns(3), deps(opt("d"))), agent("d", maxTurns(3)),
			agent("gate", deps(when(req("a"), "executions.a >= 2"))))
		w := newSim(t, e)
		w.request("", "a", nil)
		w.turn("a,d", nil)
		w.turn("a", nil) // d's output triggers a; gate waits until a has run twice
		w.delivered("a", []string{"d"}, []string{"d"})
		w.turn("gate", nil)
		w.done()
	})
	t.Run("conditions see the context, history, executions, turn count and input", func(t *testing.T) {
		t.Parallel()
		e := ens(agent("a"),
			agent("b", deps(when(req("a"), `context.a.ok && history[-1].agent_name == "a" && executions.a == 1 && turn_count == 1 && input == "the input" && len(history) == 1`))))
		w := newSim(t, e)
		w.turn("a", map[string]any{"a": map[string]any{"ok": true}})
		w.turn("b", nil)
		w.done()
		if len(w.warnings) > 0 {
			t.Fatalf("warnings: %v", w.warnings)
		}
	})
}

func TestConditionRuntimeErrors(t *testing.T) {
	t.Parallel()
	const bad = "context.a.approved == true" // a is a string: a run-time error
	t.Run("counts as false and warns", func(t *testing.T) {
		t.Parallel()
		e := ens(agent("a"), agent("b", deps(when(req("a"), bad))), agent("c", deps(req("a"))))
		w := newSim(t, e)
		w.turn("a", map[string]any{"a": "plain text"})
		ready, warns, _ := Resolve(context.Background(), e, w.s)
		if got := names(ready); !slices.Equal(got, []string{"c"}) {
			t.Fatalf("ready = %v, want [c]", got)
		}
		if len(warns) != 1 {
			t.Fatalf("warnings = %v, want one", warns)
		}
		wn := warns[0]
		if wn.Agent != "b" || wn.Dependency != "a" || wn.Expression != bad || wn.Message == "" || strings.Contains(wn.Message, "\n") {
			t.Fatalf("warning = %+v", wn)
		}
	})
	t.Run("an optional edge that errors does not block", func(t *testing.T) {
		t.Parallel()
		e := ens(agent("a"), agent("x"), agent("b", deps(req("x"), when(opt("a"), bad))))
		w := newSim(t, e)
		w.turn("a,x", map[string]any{"a": "plain text"})
		ready, warns, _ := Resolve(context.Background(), e, w.s)
		if len(ready) != 1 || !slices.Equal(ready[0].Satisfied, []string{"x"}) || len(warns) != 1 {
			t.Fatalf("ready = %+v, warnings = %v", ready, warns)
		}
	})
	t.Run("conditions are evaluated lazily", func(t *testing.T) {
		t.Parallel()
		e := ens(
			agent("a", maxTurns(2)),
			agent("no_output", deps(when(req("ghost"), bad))),                // dependency never produced
			agent("limited", maxTurns(1), deps(when(opt("a"), bad))),         // excluded by its limits below
			agent("stale", maxTurns(5), deps(req("x"), when(opt("a"), bad))), // nothing fresh
			agent("x"),
			agent("spent", maxTurns(5), deps(maxExec(when(opt("a"), bad), 1))),
		)
		w := newSim(t, e)
		w.s = state.Restore(state.Contents{
			AgentExecutionCount: map[string]int{"limited": 1, "stale": 1, "a": 2, "x": 1},
			OutputCount:         map[string]int{"a": 1, "x": 1},
			AccumulatedContext:  map[string]any{"a": "plain text"},
			Edges: map[string]map[string]*state.EdgeState{
				"stale": {"x": {Consumed: 1}, "a": {Consumed: 1}},
				"spent": {"a": {Triggered: 1}},
			},
		})
		ready, warns, _ := Resolve(context.Background(), e, w.s)
		if len(ready) != 0 || len(warns) != 0 {
			t.Fatalf("ready = %v, warnings = %v: a condition was evaluated", names(ready), warns)
		}
	})
	t.Run("a false required edge stops the evaluation", func(t *testing.T) {
		t.Parallel()
		e := ens(agent("a"), agent("b"), agent("c", deps(when(opt("a"), bad), when(req("b"), "false"), when(req("a"), bad))))
		w := newSim(t, e)
		w.turn("a,b", map[string]any{"a": "plain text"})
		ready, warns, _ := Resolve(context.Background(), e, w.s)
		if len(ready) != 0 || len(warns) != 0 {
			t.Fatalf("ready = %v, warnings = %v", names(ready), warns)
		}
	})
}

func TestAgentRequests(t *testing.T) {
	t.Parallel()
	t.Run("ready through a request without a fresh edge", func(t *testing.T) {
		t.Parallel()
		e := ens(agent("a"), agent("b", maxTurns(5), deps(req("a"))), agent("boss", maxTurns(5)))
		w := newSim(t, e)
		w.turn("a,boss", nil)
		w.turn("b", nil)
		w.done()
		w.request("boss", "b", map[string]any{"retry": true})
		w.turn("b", nil)
		r := w.ready("b")
		if len(r.Requests) != 1 || r.Requests[0].Parameters["retry"] != true || r.Requests[0].From != "boss" {
			t.Fatalf("requests = %+v", r.Requests)
		}
		w.delivered("b", []string{"a"}, []string{}) // still gets a's output; nothing fresh
		if len(w.s.Pending()) != 0 {
			t.Fatalf("pending = %v, want none", w.s.Pending())
		}
		if es := w.s.Edge("b", "a"); es.Triggered != 1 {
			t.Fatalf("b←a triggered %d, want 1", es.Triggered)
		}
		w.done()
	})
	t.Run("ready through a request despite an unsatisfied required edge", func(t *testing.T) {
		t.Parallel()
		e := ens(agent("b", deps(req("ghost"), when(opt("c"), "true"))), agent("c"))
		w := newSim(t, e)
		w.request("x", "b", nil)
		w.turn("b,c", nil)
		w.delivered("b", nil, nil)
		w.done()
	})
	t.Run("a no-deps agent runs again on request", func(t *testing.T) {
		t.Parallel()
		w := newSim(t, ens(agent("a", maxTurns(3))))
		w.turn("a", nil)
		w.request("a", "a", nil)
		w.request("a", "a", map[string]any{"n": 2})
		w.turn("a", nil)
		if r := w.ready("a"); len(r.Requests) != 2 {
			t.Fatalf("requests = %v, want both", r.Requests)
		}
		w.done()
	})
	t.Run("still limited by max_turns", func(t *testing.T) {
		t.Parallel()
		w := newSim(t, ens(agent("a", maxTurns(1)), agent("b")))
		w.turn("a,b", nil)
		w.request("b", "a", nil)
		w.done()
	})
	t.Run("still limited by max_agent_executions", func(t *testing.T) {
		t.Parallel()
		e := ens(agent("a", maxTurns(5)))
		e.Limits.MaxAgentExecutions = map[string]int{"a": 1}
		w := newSim(t, e)
		w.turn("a", nil)
		w.request("b", "a", nil)
		w.done()
	})
	t.Run("only the requests it was given are consumed", func(t *testing.T) {
		t.Parallel()
		w := newSim(t, ens(agent("a", maxTurns(5)), agent("b", maxTurns(5))))
		w.turn("a,b", nil)
		w.request("x", "a", map[string]any{"n": 1})
		w.request("x", "b", nil)
		ready, _, _ := Resolve(context.Background(), w.e, w.s)
		// A request made after the agents were resolved (in the same commit).
		w.request("y", "a", map[string]any{"n": 2})
		consumed(w.s, ready[0])
		if len(w.s.Pending()) != 2 || w.s.Pending()[0].Target != "b" || w.s.Pending()[1].Parameters["n"] != 2 {
			t.Fatalf("pending = %+v", w.s.Pending())
		}
	})
}

// The writer drafts from a brief; the reviewer sends it back until it
// approves; then the publisher runs once (examples/writer-reviewer).
func TestWriterReviewerLoop(t *testing.T) {
	t.Parallel()
	e := ens(
		agent("brief"),
		agent("writer", maxTurns(5), deps(req("brief"), when(opt("reviewer"), "context.reviewer?.approved != true"))),
		agent("reviewer", maxTurns(5), deps(req("writer"))),
		agent("publisher", deps(when(req("reviewer"), "context.reviewer.approved == true"))),
	)
	review := func(ok bool) map[string]any { return map[string]any{"reviewer": map[string]any{"approved": ok}} }
	w := newSim(t, e)
	w.turn("brief", nil)
	w.turn("writer", map[string]any{"writer": "draft 1"})
	w.delivered("writer", []string{"brief"}, []string{"brief"})
	w.turn("reviewer", review(false))
	w.turn("writer", map[string]any{"writer": "draft 2"})
	w.delivered("writer", []string{"brief", "reviewer"}, []string{"reviewer"})
	w.turn("reviewer", review(false))
	w.turn("writer", map[string]any{"writer": "draft 3"})
	w.turn("reviewer", review(true))
	w.turn("publisher", nil)
	w.delivered("publisher", []string{"reviewer"}, []string{"reviewer"})
	w.done()
	if w.s.TurnCount != 8 || w.s.Executions("writer") != 3 || w.s.Executions("reviewer") != 3 {
		t.Fatalf("turns %d, executions %v", w.s.TurnCount, w.s.ExecutionCounts())
	}
	if len(w.warnings) > 0 {
		t.Fatalf("warnings: %v", w.warnings)
	}
}

func TestWriterReviewerNeverApproves(t *testing.T) {
	t.Parallel()
	e := ens(
		agent("brief"),
		agent("writer", maxTurns(3), deps(req("brief"), when(opt("reviewer"), "context.reviewer?.approved != true"))),
		agent("reviewer", maxTurns(5), deps(req("writer"))),
		agent("publisher", deps(when(req("reviewer"), "context.reviewer.approved == true"))),
	)
	w := newSim(t, e)
	got := w.runAll(50, func(int, string) any { return map[string]any{"approved": false} })
	want := []string{"brief", "writer", "reviewer", "writer", "reviewer", "writer", "reviewer"}
	if !slices.Equal(got, want) {
		t.Fatalf("turns = %q, want %q", got, want)
	}
}

// The iterative analysis example (docs/format.md): extract, analyze, ask the user when
// the analyzer needs clarification, analyze again, synthesize.
func iterativeAnalysis() *ensemble.Ensemble {
	e := ens(
		agent("data_extractor", stateKey("extracted_data")),
		agent("llm_analyzer", maxTurns(3), deps(req("data_extractor"), opt("user_clarification"))),
		agent("user_clarification", maxTurns(3),
			deps(maxExec(when(req("llm_analyzer"), "context.llm_analyzer?.needs_clarification == true"), 3))),
		agent("final_synthesis", deps(when(req("llm_analyzer"), "context.llm_analyzer?.needs_clarification != true"))),
	)
	e.Limits.MaxAgentExecutions = map[string]int{"llm_analyzer": 3}
	return e
}

func TestIterativeAnalysis(t *testing.T) {
	t.Parallel()
	needs := func(b bool) map[string]any {
		return map[string]any{"llm_analyzer": map[string]any{"needs_clarification": b}}
	}
	t.Run("one clarification", func(t *testing.T) {
		t.Parallel()
		w := newSim(t, iterativeAnalysis())
		w.turn("data_extractor", map[string]any{"data_extractor": map[string]any{"rows": 3.0}})
		w.turn("llm_analyzer", needs(true))
		w.delivered("llm_analyzer", []string{"data_extractor"}, []string{"data_extractor"})
		w.turn("user_clarification", map[string]any{"user_clarification": "Q3 only, EMEA"})
		w.delivered("user_clarification", []string{"llm_analyzer"}, []string{"llm_analyzer"})
		w.turn("llm_analyzer", needs(false))
		w.delivered("llm_analyzer", []string{"data_extractor", "user_clarification"}, []string{"user_clarification"})
		w.turn("final_synthesis", nil)
		w.delivered("final_synthesis", []string{"llm_analyzer"}, []string{"llm_analyzer"})
		w.done()
		if len(w.warnings) > 0 {
			t.Fatalf("warnings: %v", w.warnings)
		}
	})
	t.Run("the analyzer keeps asking: bounded by max_turns", func(t *testing.T) {
		t.Parallel()
		w := newSim(t, iterativeAnalysis())
		got := w.runAll(50, func(_ int, a string) any {
			if a == "llm_analyzer" {
				return map[string]any{"needs_clarification": true}
			}
			return nil
		})
		want := []string{"data_extractor", "llm_analyzer", "user_clarification", "llm_analyzer",
			"user_clarification", "llm_analyzer", "user_clarification"}
		if !slices.Equal(got, want) {
			t.Fatalf("turns = %q, want %q", got, want)
		}
	})
	t.Run("the analyzer fails", func(t *testing.T) {
		t.Parallel()
		w := newSim(t, iterativeAnalysis())
		w.turn("data_extractor", nil)
		w.turn("llm_analyzer", map[string]any{"llm_analyzer": failed})
		w.done()
	})
	t.Run("the analyzer answers in plain text", func(t *testing.T) {
		t.Parallel()
		// A string has no fields: `?.` on it is a run-time error for both
		// conditions, so neither runs, and each warns.
		w := newSim(t, iterativeAnalysis())
		w.turn("data_extractor", nil)
		w.turn("llm_analyzer", map[string]any{"llm_analyzer": "EMEA grew 12%"})
		w.done()
		if len(w.warnings) != 2 {
			t.Fatalf("warnings = %v", w.warnings)
		}
	})
}

func TestConsumeIsIdempotentForConsumption(t *testing.T) {
	t.Parallel()
	w := newSim(t, ens(agent("a"), agent("b", deps(req("a")))))
	w.turn("a", nil)
	ready := w.resolve()
	consumed(w.s, ready[0])
	if es := w.s.Edge("b", "a"); es.Consumed != 1 || es.Triggered != 1 {
		t.Fatalf("%+v", *es)
	}
	// Ready built by hand (no snapshot): consumes the current output count.
	consumed(w.s, Ready{Agent: w.e.Agent("b"), Satisfied: []string{"a"}})
	if es := w.s.Edge("b", "a"); es.Consumed != 1 || es.Triggered != 1 {
		t.Fatalf("%+v", *es)
	}
}
