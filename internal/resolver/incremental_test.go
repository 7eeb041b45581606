package resolver

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/ensemble-run/ensemble/ensemble"
)

// randomEnsemble builds n agents with random dependencies (cycles allowed),
// edge kinds, limits and conditions that read state the agent does not own
// (turn_count, another agent's output, executions), so that an edge can turn
// true without any new output.
func randomEnsemble(rng *rand.Rand, n int) *ensemble.Ensemble {
	conds := []string{
		"turn_count % 3 == 0",
		"turn_count > 4",
		"executions.a0 >= 2",
		"context.a1 != nil",
		"len(history) % 2 == 1",
		"input == 'the input'",
		"context.a0 == 'fail' ? 1/0 > 0 : true", // fails at run time: a warning
	}
	agents := make([]*ensemble.Agent, n)
	for i := range agents {
		a := agent(fmt.Sprintf("a%d", i), maxTurns(1+rng.IntN(4)))
		a.TriggerAll = rng.IntN(3) == 0
		for j := range n {
			if j == i && rng.IntN(4) > 0 || rng.IntN(3) > 0 {
				continue
			}
			var d = req(fmt.Sprintf("a%d", j))
			if rng.IntN(2) == 0 {
				d = opt(d.AgentName)
			}
			if rng.IntN(3) == 0 {
				d = when(d, conds[rng.IntN(len(conds))])
			}
			if rng.IntN(4) == 0 {
				d = maxExec(d, 1+rng.IntN(2))
			}
			d.OnFailure = rng.IntN(4) == 0
			a.Dependencies = append(a.Dependencies, d)
		}
		agents[i] = a
	}
	e := ens(agents...)
	if rng.IntN(2) == 0 {
		e.Limits.MaxAgentExecutions = map[string]int{"a0": 1 + rng.IntN(3)}
	}
	return e
}

// The Resolver looks at fewer agents than Resolve, never with a different
// answer: random ensembles, random failures and requests, every turn
// compared (sim.resolve checks the two against each other).
func TestResolverMatchesResolve(t *testing.T) {
	t.Parallel()
	for seed := range 300 {
		rng := rand.New(rand.NewPCG(uint64(seed), 7))
		e := randomEnsemble(rng, 2+rng.IntN(6))
		w := newSim(t, e)
		for range 40 {
			ready := w.resolve()
			if len(ready) == 0 && len(w.s.Pending()) == 0 {
				if rng.IntN(2) == 0 {
					break
				}
			}
			outs := map[string]any{}
			for _, r := range ready {
				switch rng.IntN(5) {
				case 0:
					outs[r.Agent.Name] = failed
				case 1:
					outs[r.Agent.Name] = "fail"
				}
			}
			if rng.IntN(4) == 0 {
				w.request("x", fmt.Sprintf("a%d", rng.IntN(len(e.Agents))), nil)
			}
			w.run(ready, outs)
			if len(ready) == 0 {
				w.s.TurnCount++ // an idle turn: conditions on turn_count move
			}
		}
	}
}
