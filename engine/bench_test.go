package engine_test

import (
	"context"
	"fmt"
	"testing"

	agentpkg "github.com/ensemble-run/ensemble/agent"
	"github.com/ensemble-run/ensemble/engine"
	"github.com/ensemble-run/ensemble/ensemble"
	"github.com/ensemble-run/ensemble/internal/responses"
)

// injected answers every execution of every agent from injected responses,
// as --responses does: only orchestration is measured. Nothing else runs.
func injected(e *ensemble.Ensemble, perAgent int) agentpkg.Runner {
	resp := responses.NewResponses()
	for _, a := range e.Agents {
		for i := range perAgent {
			resp.Add(a.Name, map[string]any{"n": i + 1})
		}
	}
	return responses.Injected(resp, agentpkg.RunnerFunc(func(context.Context, *agentpkg.Request) *agentpkg.Result {
		panic("not injected")
	}))
}

// BenchmarkDAG runs DAGs of 1,000 and 20,000 agents in levels of 50, each
// agent depending on every agent of the level before (50 edges each).
// Targets: 1,000 agents ≤ 60 ms, 20,000 ≤ 1 s, and ns/agent flat
// (docs/performance.md).
func BenchmarkDAG(b *testing.B) {
	for _, n := range []int{1000, 20000} {
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			const width = 50
			var agents []*ensemble.Agent
			for level := range n / width {
				for i := range width {
					var deps []string
					if level > 0 {
						for j := range width {
							deps = append(deps, fmt.Sprintf("l%d_%d", level-1, j))
						}
					}
					agents = append(agents, agent(fmt.Sprintf("l%d_%d", level, i), 1, deps...))
				}
			}
			e := build(agents...)
			e.Limits.ParallelAgentLimit = width
			e.Limits.MaxTotalTurns = n/width + 1
			run := injected(e, 1)
			b.ReportAllocs()
			for b.Loop() {
				res := engine.New(e, "", engine.Options{Runner: run}).Run(context.Background())
				if res.TurnCount != n/width || len(res.ConversationHistory) != n {
					b.Fatalf("turns %d, executions %d", res.TurnCount, len(res.ConversationHistory))
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(n), "ns/agent")
		})
	}
}

// BenchmarkLoop runs a two-agent loop of 2×turns executions with conditions
// on its edges, one of them reading the history. ns/turn must not grow with
// the number of turns (docs/performance.md).
func BenchmarkLoop(b *testing.B) {
	for _, turns := range []int{1000, 16000} {
		b.Run(fmt.Sprintf("2x%d", turns), func(b *testing.B) {
			e := build(
				agent("start", 1),
				agent("ping", turns, "start", "?pong|executions.ping < 1000000 && len(history) >= 0"),
				agent("pong", turns, "ping|context.ping?.n > 0"),
			)
			e.Limits.MaxTotalTurns = 2*turns + 1
			run := injected(e, turns)
			b.ReportAllocs()
			for b.Loop() {
				res := engine.New(e, "", engine.Options{Runner: run}).Run(context.Background())
				if res.TurnCount != 2*turns+1 || res.CompletionReason != engine.Completed {
					b.Fatalf("turns %d (%s)", res.TurnCount, res.CompletionReason)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(2*turns+1), "ns/turn")
		})
	}
}
