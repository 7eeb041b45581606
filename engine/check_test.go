package engine_test

import (
	"path/filepath"
	"testing"

	"github.com/ensemble-run/ensemble/engine"
	"github.com/ensemble-run/ensemble/ensemble"
	askkind "github.com/ensemble-run/ensemble/kinds/ask"
	llmkind "github.com/ensemble-run/ensemble/kinds/llm"
	scriptkind "github.com/ensemble-run/ensemble/kinds/script"
	"github.com/ensemble-run/ensemble/state"
)

// reviewEnsemble is the ensemble the states of testdata/statecheck were
// saved from: a writer (an LLM agent, whose state key is "draft") and a
// reviewer that requests a checker, a human judge last.
func reviewEnsemble() *ensemble.Ensemble {
	dep := func(name string, required bool) *ensemble.Dependency {
		return &ensemble.Dependency{AgentName: name, RequiresAll: required}
	}
	ag := func(name string, kind ensemble.Kind, deps ...*ensemble.Dependency) *ensemble.Agent {
		return &ensemble.Agent{Name: name, Kind: kind, Dependencies: deps, Conversation: ensemble.Conversation{MaxTurns: 3}}
	}
	writer := ag("writer", llmkind.Kind{}, dep("seed", true), dep("reviewer", false))
	writer.Conversation.StateKey = "draft"
	reviewer := ag("reviewer", scriptkind.Kind{}, dep("writer", true))
	reviewer.Conversation.TriggersConversation = true
	e := &ensemble.Ensemble{Name: "review", Path: "/work/review/ensemble.yaml",
		Hash: "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef",
		Agents: []*ensemble.Agent{
			ag("seed", scriptkind.Kind{}),
			writer,
			ag("checker", scriptkind.Kind{}, dep("seed", true)),
			reviewer,
			ag("judge", askkind.Kind{}, dep("reviewer", true)),
		}}
	e.Index()
	return e
}

// Each file of testdata/statecheck is valid.json edited by hand so that it
// no longer fits the ensemble it was saved from.
func TestCheckStateRejectsStatesThatDoNotFit(t *testing.T) {
	t.Parallel()
	load := func(t *testing.T, name string) *state.File {
		f, err := state.Load(filepath.Join("testdata", "statecheck", name+".json"))
		if err != nil {
			t.Fatal(err)
		}
		return f
	}
	if err := engine.CheckState(reviewEnsemble(), load(t, "valid")); err != nil {
		t.Fatal(err)
	}
	const missing = `, which the ensemble /work/review/ensemble.yaml does not have`
	for _, tc := range []struct{ file, msg string }{
		{"completion-reason", `completion_reason "finished" is not one of "completed", "max_total_turns", "timeout", "cancelled", "awaiting_input", "budget_exceeded", "expectation_failed", "strict_warning", or "" while the run goes on`},
		{"history-unknown-agent", `state.conversation_history[2].agent_name names agent "ghost"` + missing},
		{"count-unknown-agent", `state.agent_execution_count names agent "ghost"` + missing},
		{"edge-unknown-agent", `state.edges names agent "ghost"` + missing},
		{"edge-not-a-dependency", `state.edges.checker.writer is the edge checker ← writer, but "checker" has no dependency on "writer"`},
		{"pending-unknown-target", `state.pending_requests[0].target_agent_name names agent "ghost"` + missing},
		{"memory-unknown-agent", `state.memory names agent "ghost"` + missing},
		{"memory-of-a-script", `state.memory.seed is set, but "seed" is a script agent, which keeps no memory`},
		{"memory-a-string", `state.memory.writer is not a stored conversation (want {"version": 1, "messages": [{"role": …}, …]})`},
		{"memory-no-version", `state.memory.writer is not a stored conversation (want {"version": 1, "messages": [{"role": …}, …]})`},
		{"memory-no-role", `state.memory.writer is not a stored conversation (messages[1] has no role)`},
		{"context-unknown-key", `state.accumulated_context.extra is the state key of no agent of the ensemble /work/review/ensemble.yaml`},
		{"context-without-output", `state.accumulated_context.checker is set, but "checker", whose state key it is, has no output`},
		{"context-missing", `state.accumulated_context has no "seed", the state key of "seed", which has 1 outputs`},
	} {
		t.Run(tc.file, func(t *testing.T) {
			t.Parallel()
			err := engine.CheckState(reviewEnsemble(), load(t, tc.file))
			if err == nil || err.Error() != tc.msg {
				t.Fatalf("error\n  %v\nwant\n  %s", err, tc.msg)
			}
		})
	}
}

// Resumed with --force after its ensemble changed, a state may name agents
// that are gone; only its completion reason must still make sense.
func TestCheckStateOfAChangedEnsemble(t *testing.T) {
	t.Parallel()
	e := reviewEnsemble()
	e.Hash = "fedcba9876543210fedcba9876543210fedcba9876543210fedcba9876543210"
	for file, ok := range map[string]bool{"history-unknown-agent": true, "memory-of-a-script": true, "completion-reason": false} {
		f, err := state.Load(filepath.Join("testdata", "statecheck", file+".json"))
		if err != nil {
			t.Fatal(err)
		}
		if err := engine.CheckState(e, f); (err == nil) != ok {
			t.Errorf("%s: %v", file, err)
		}
	}
}

// A state saved by a run loads and fits its ensemble, whatever the run's end.
func TestCheckStateAcceptsSavedRuns(t *testing.T) {
	t.Parallel()
	e := durableEnsemble(t)
	for _, maxTurns := range []int{1, 3, 100} {
		r := engine.New(e, "in", engine.Options{Runner: durableRunner(nil), MaxTurns: maxTurns})
		res := r.Run(t.Context())
		sf := r.File(res.CompletionReason)
		c := sf.State.Contents()
		c.Memory = nil // the test runner keeps memory for script agents, which real runners never do
		sf.State = state.Restore(c)
		path := filepath.Join(t.TempDir(), "run.state")
		if err := state.Save(path, sf); err != nil {
			t.Fatal(err)
		}
		f, err := state.Load(path)
		if err == nil {
			err = engine.CheckState(e, f)
		}
		if err != nil {
			t.Errorf("max turns %d (%s): %v", maxTurns, res.CompletionReason, err)
		}
	}
}
