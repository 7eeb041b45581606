package engine_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/ensemble-run/ensemble/engine"
	"github.com/ensemble-run/ensemble/ensemble"
	"github.com/ensemble-run/ensemble/runners"
)

// injected answers every execution of every agent from injected responses,
// as --responses does: only orchestration is measured. Nothing else runs.
func injected(e *ensemble.Ensemble, perAgent int) runners.Runner {
	resp := runners.NewResponses()
	for _, a := range e.Agents {
		for i := range perAgent {
			resp.Add(a.Name, map[string]any{"n": i + 1})
		}
	}
	return runners.Injected(resp, runners.RunnerFunc(func(context.Context, *runners.Request) *runners.Result {
		panic("not injected")
	}))
}

// BenchmarkDAG1000 runs a DAG of 20 levels of 50 agents, each depending on
// every agent of the level before. Target: under 1 s per run.
func BenchmarkDAG1000(b *testing.B) {
	var agents []*ensemble.Agent
	for level := range 20 {
		for i := range 50 {
			var deps []string
			if level > 0 {
				for j := range 50 {
					deps = append(deps, fmt.Sprintf("l%d_%d", level-1, j))
				}
			}
			agents = append(agents, agent(fmt.Sprintf("l%d_%d", level, i), 1, deps...))
		}
	}
	e := build(agents...)
	e.Limits.ParallelAgentLimit = 50
	run := injected(e, 1)
	b.ReportAllocs()
	for b.Loop() {
		res := engine.New(e, "", engine.Options{Runner: run}).Run(context.Background())
		if res.TurnCount != 20 || len(res.ConversationHistory) != 1000 {
			b.Fatalf("turns %d, executions %d", res.TurnCount, len(res.ConversationHistory))
		}
	}
}

// BenchmarkLoop runs a two-agent loop of turns turns with a condition on
// the loop edge. Target: 2×4,000 turns under 2 s, cost linear in turns.
func BenchmarkLoop(b *testing.B) {
	for _, turns := range []int{1000, 16000} {
		b.Run(fmt.Sprint(turns), func(b *testing.B) {
			e := build(
				agent("start", 1),
				agent("ping", turns, "start", "?pong|executions.ping < 1000000 && len(history) >= 0"),
				agent("pong", turns, "ping|context.ping?.n > 0"),
			)
			e.Limits.MaxTotalTurns = turns + 1
			run := injected(e, turns)
			b.ReportAllocs()
			for b.Loop() {
				res := engine.New(e, "", engine.Options{Runner: run}).Run(context.Background())
				if res.TurnCount != turns+1 {
					b.Fatalf("turns %d (%s)", res.TurnCount, res.CompletionReason)
				}
			}
		})
	}
}
