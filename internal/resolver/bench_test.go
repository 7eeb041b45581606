package resolver

import (
	"context"
	"fmt"
	"testing"

	"github.com/ensemble-run/ensemble/ensemble"
	"github.com/ensemble-run/ensemble/state"
)

// dag is levels×width agents; each agent requires every agent of the level
// before it.
func dag(levels, width int) *ensemble.Ensemble {
	var agents []*ensemble.Agent
	for l := 0; l < levels; l++ {
		for i := 0; i < width; i++ {
			a := agent(fmt.Sprintf("l%02d_a%02d", l, i))
			if l > 0 {
				for j := 0; j < width; j++ {
					a.Dependencies = append(a.Dependencies, req(fmt.Sprintf("l%02d_a%02d", l-1, j)))
				}
			}
			agents = append(agents, a)
		}
	}
	return ens(agents...)
}

// play runs the ensemble to the end the way the engine commits a turn, and
// returns the number of turns.
func play(b *testing.B, e *ensemble.Ensemble, s *state.State, output func(a *ensemble.Agent, n int) any) int {
	for {
		ready, _, _ := Resolve(context.Background(), e, s)
		if len(ready) == 0 {
			return s.TurnCount
		}
		turn := s.TurnCount + 1
		for _, r := range ready {
			consumed(s, r)
		}
		for _, r := range ready {
			a := r.Agent
			s.CountExecution(a.Name)
			n := s.Executions(a.Name)
			out := output(a, n)
			s.SetOutput(a.Name, a.StateKey(), out)
			s.AppendRecord(&state.Record{TurnNumber: turn, AgentName: a.Name, Execution: n, OutputData: out})
		}
		s.TurnCount = turn
	}
}

func BenchmarkResolveDAG1000(b *testing.B) {
	e := dag(20, 50)
	b.ReportAllocs()
	for b.Loop() {
		s := state.New("")
		if turns := play(b, e, s, func(*ensemble.Agent, int) any { return "x" }); turns != 20 {
			b.Fatalf("%d turns", turns)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/20, "ns/turn")
}

func loop(turns int) *ensemble.Ensemble {
	return ens(
		agent("brief"),
		agent("writer", maxTurns(turns), deps(req("brief"), when(opt("reviewer"), "context.reviewer?.approved != true"))),
		agent("reviewer", maxTurns(turns), deps(req("writer"))),
	)
}

var notApproved = map[string]any{"approved": false}

// A two-agent loop of 2×4,000 turns: the cost per turn must not grow with
// the history.
func BenchmarkResolveLoop(b *testing.B) {
	e := loop(4000)
	b.ReportAllocs()
	for b.Loop() {
		s := state.New("")
		if turns := play(b, e, s, func(*ensemble.Agent, int) any { return notApproved }); turns != 8001 {
			b.Fatalf("%d turns", turns)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/8001, "ns/turn")
}

// The loop's speed per turn is BenchmarkResolveLoop (and the 400/4,000-turn
// pair below); this test only checks that a long loop plays out in full.
func TestLongLoopPlaysEveryTurn(t *testing.T) {
	t.Parallel()
	e, s := loop(4000), state.New("")
	if n := play(nil, e, s, func(*ensemble.Agent, int) any { return notApproved }); n != 8001 {
		t.Fatalf("%d turns, want 8001", n)
	}
	if s.Executions("writer") != 4000 || s.Executions("reviewer") != 4000 {
		t.Fatalf("executions %v", s.ExecutionCounts())
	}
}

// Linear in turns: compare ns/turn of the two sizes (go test -bench LoopTurns).
func BenchmarkResolveLoopTurns(b *testing.B) {
	for _, turns := range []int{400, 4000} {
		b.Run(fmt.Sprint(turns), func(b *testing.B) {
			e := loop(turns)
			for b.Loop() {
				play(b, e, state.New(""), func(*ensemble.Agent, int) any { return notApproved })
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(2*turns+1), "ns/turn")
		})
	}
}

func TestDAG1000(t *testing.T) {
	t.Parallel()
	e := dag(20, 50)
	s := state.New("")
	if turns := play(nil, e, s, func(*ensemble.Agent, int) any { return "x" }); turns != 20 {
		t.Fatalf("%d turns", turns)
	}
	for _, a := range e.Agents {
		if s.Executions(a.Name) != 1 {
			t.Fatalf("%s ran %d times", a.Name, s.Executions(a.Name))
		}
	}
}
