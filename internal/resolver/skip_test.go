package resolver

import (
	"testing"

	"github.com/ensemble-run/ensemble/ensemble"
)

// A router decides, two guarded branches, and a join that runs with the
// branch that ran (docs/semantics.md#guards-that-skip).
func TestGuardedJoin(t *testing.T) {
	t.Parallel()
	for _, trigger := range []agentOpt{func(*ensemble.Agent) {}, triggerAll()} {
		e := ens(
			agent("router"),
			agent("a", deps(req("router")), guard("context.router == 'a'")),
			agent("b", deps(req("router")), guard("context.router == 'b'")),
			agent("join", deps(req("a"), req("b")), trigger),
		)
		w := newSim(t, e)
		w.turn("router", map[string]any{"router": "a"})
		w.turn("a,-b", nil)
		if w.ready("b").Skip != SkipWhen {
			t.Fatalf("b: skip %v, want SkipWhen", w.ready("b").Skip)
		}
		w.turn("join", nil)
		w.delivered("join", []string{"a", "b"}, []string{"a", "b"})
		if DeliversSkip(w.s, e.Agents[1].Dependencies[0]) || !DeliversSkip(w.s, e.Agent("join").Dependencies[1]) {
			t.Fatal("join←b should deliver a skip, a←router not")
		}
		w.done()
		if w.s.Executions("b") != 0 || w.s.Skips("b") != 1 {
			t.Fatalf("b: %d executions, %d skips; want 0 and 1", w.s.Executions("b"), w.s.Skips("b"))
		}
		if es := w.s.Edge("b", "router"); es == nil || es.Consumed != 1 || es.Triggered != 0 {
			t.Fatalf("b←router = %+v, want consumed 1, triggered 0 (a skip consumes, triggers nothing)", es)
		}
	}
}

// A condition on the edge from a skipped branch is not evaluated: the skip
// delivers no output to test, and the join runs with what the other
// branch delivered (the condition would fail on the missing key, count as
// false, and the join would never run).
func TestGuardedJoinWithACondition(t *testing.T) {
	t.Parallel()
	e := ens(
		agent("router"),
		agent("a", deps(req("router")), guard("context.router == 'a'")),
		agent("b", deps(req("router")), guard("context.router == 'b'")),
		agent("join", deps(req("a"), when(req("b"), "context.b.ticket != ''"))),
	)
	w := newSim(t, e)
	w.turn("router", map[string]any{"router": "a"})
	w.turn("a,-b", nil)
	w.turn("join", nil)
	w.done()
}

// An agent whose required dependencies were all skipped is skipped in the
// next turn, and so on down the chain; an optional edge neither carries a
// skip nor is triggered by one.
func TestSkipPropagates(t *testing.T) {
	t.Parallel()
	e := ens(
		agent("src"),
		agent("b", deps(req("src")), guard("false")),
		agent("c", deps(req("b"))),
		agent("d", deps(req("c"), req("src"))), // src delivers an output: d runs
		agent("e", deps(opt("c"))),             // optional: never ready through a skip
	)
	w := newSim(t, e)
	w.turn("src", nil)
	w.turn("-b", nil)
	w.turn("-c", nil)
	if w.ready("c").Skip != SkipDependencies {
		t.Fatalf("c: skip %v, want SkipDependencies", w.ready("c").Skip)
	}
	w.turn("d", nil)
	w.delivered("d", []string{"c", "src"}, []string{"c", "src"})
	w.done()
}

// A guarded agent without dependencies is skipped once, like it runs once.
func TestGuardWithoutDependencies(t *testing.T) {
	t.Parallel()
	e := ens(agent("lone", guard("input == 'go'")), agent("after", deps(req("lone"))))
	w := newSim(t, e)
	w.turn("-lone", nil)
	w.turn("-after", nil)
	w.done()
}

// In a loop, a skip belongs to one round: the guard is evaluated again on
// the next output of the agent's dependencies, and a skip does not go round
// an optional back edge, so the loop ends with it.
func TestGuardInLoop(t *testing.T) {
	t.Parallel()
	e := ens(
		agent("start"),
		agent("writer", maxTurns(5), deps(req("start"), opt("reviewer"))),
		agent("reviewer", maxTurns(5), deps(req("writer")), guard("context.writer.review")),
	)
	w := newSim(t, e)
	w.turn("start", nil)
	w.turn("writer", map[string]any{"writer": map[string]any{"review": false}})
	w.turn("-reviewer", nil)
	w.done() // the skip does not trigger the writer through its optional edge

	w = newSim(t, e)
	w.turn("start", nil)
	w.turn("writer", map[string]any{"writer": map[string]any{"review": true}})
	w.turn("reviewer", nil)
	w.turn("writer", map[string]any{"writer": map[string]any{"review": false}})
	w.turn("-reviewer", nil)
	w.done()
	w.request("writer", "writer", nil) // a request still makes it run
	w.turn("writer", map[string]any{"writer": map[string]any{"review": true}})
	w.turn("reviewer", nil)
}

// Skips count with executions towards max_turns: a loop of skips ends.
func TestSkipsCountTowardsLimits(t *testing.T) {
	t.Parallel()
	e := ens(
		agent("start"),
		agent("tick", maxTurns(3), deps(req("start"), opt("tock"))),
		agent("tock", maxTurns(2), deps(req("tick")), guard("executions.tick > 1")),
	)
	w := newSim(t, e)
	w.turn("start", nil)
	w.turn("tick", nil)
	w.turn("-tock", nil)
	w.done()
	w.request("tick", "tick", nil)
	w.turn("tick", nil)
	w.turn("tock", nil) // round 2 of tock: its guard holds now
	w.turn("tick", nil)
	w.done() // tock has had its 2 rounds, a skip and an execution
}

// A guard that fails counts as false, with a warning.
func TestGuardRuntimeError(t *testing.T) {
	t.Parallel()
	e := ens(agent("src"), agent("g", deps(req("src")), guard("context.src.missing.deeper == 1")))
	w := newSim(t, e)
	w.turn("src", map[string]any{"src": map[string]any{}})
	w.turn("-g", nil)
	// The read of missing (src has no such key) comes first, then the
	// failure of .deeper on its null.
	if len(w.warnings) != 2 || w.warnings[0].Miss == nil || w.warnings[0].Miss.Path != "context.src.missing" ||
		w.warnings[1].Agent != "g" || w.warnings[1].Dependency != "" || w.warnings[1].Miss != nil {
		t.Fatalf("warnings = %+v, want a miss and a failure of g's guard", w.warnings)
	}
}
