package resolver

import (
	"fmt"
	"testing"
	"time"

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
		ready, _ := Resolve(e, s)
		if len(ready) == 0 {
			return s.TurnCount
		}
		turn := s.TurnCount + 1
		for _, r := range ready {
			Consume(s, r)
		}
		for _, r := range ready {
			a := r.Agent
			s.AgentExecutionCount[a.Name]++
			n := s.AgentExecutionCount[a.Name]
			out := output(a, n)
			s.AccumulatedContext[a.StateKey()] = out
			s.OutputCount[a.Name]++
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

// Linear in turns: 8,000 turns cost about ten times 800.
func TestLoopCostIsLinear(t *testing.T) {
	if testing.Short() {
		t.Skip("timing")
	}
	measure := func(turns int) time.Duration {
		best := time.Duration(1 << 62)
		for i := 0; i < 3; i++ {
			e, s := loop(turns), state.New("")
			start := time.Now()
			if n := play(nil, e, s, func(*ensemble.Agent, int) any { return notApproved }); n != 2*turns+1 {
				t.Fatalf("%d turns", n)
			}
			best = min(best, time.Since(start))
		}
		return best
	}
	small, large := measure(400), measure(4000)
	t.Logf("2×400 turns: %v, 2×4000 turns: %v", small, large)
	if large > 30*small+20*time.Millisecond {
		t.Fatalf("not linear: 2×400 turns took %v, 2×4000 took %v", small, large)
	}
	if large > time.Second {
		t.Fatalf("2×4000 turns took %v", large)
	}
}

func TestDAG1000(t *testing.T) {
	t.Parallel()
	e := dag(20, 50)
	s := state.New("")
	start := time.Now()
	if turns := play(nil, e, s, func(*ensemble.Agent, int) any { return "x" }); turns != 20 {
		t.Fatalf("%d turns", turns)
	}
	if d := time.Since(start); d > 500*time.Millisecond {
		t.Fatalf("took %v", d)
	}
	for _, a := range e.Agents {
		if s.AgentExecutionCount[a.Name] != 1 {
			t.Fatalf("%s ran %d times", a.Name, s.AgentExecutionCount[a.Name])
		}
	}
}
