package resolver

import (
	"context"
	"slices"

	"github.com/ensemble-run/ensemble/ensemble"
	"github.com/ensemble-run/ensemble/state"
)

// Resolver resolves the turns of one run. It gives the same answers as
// Resolve, but a turn costs what changed since the last one, not the size
// of the ensemble: it looks only at the agents whose readiness may have
// changed (docs/performance.md). Those are
//
//   - every agent, the first time;
//   - the agents that executed since (their counts and edges moved), and
//     the dependents of those that produced an output (an edge became fresh);
//   - the targets of pending requests;
//   - the agents that were ready, or that have a fresh edge whose condition
//     may turn true as the state changes (conditions read the whole state).
//
// An agent outside these cannot become ready: every rule it fails needs a
// new output of one of its dependencies, or a request, to pass. The history
// is how the Resolver learns what ran: the state must grow only by committed
// turns between calls (as the engine does), or the Resolver must be new.
// Ready never modifies the state.
type Resolver struct {
	e          *ensemble.Ensemble
	dependents [][]int // agent index → the agents that depend on it
	candidate  []bool  // agent index → look at it next turn
	list       []int   // the agents with candidate set
	seen       int     // records of the history already accounted for
	started    bool
	sc         scan // reused from turn to turn
}

// New returns a Resolver for runs of e; e must be indexed (as Load does).
func New(e *ensemble.Ensemble) *Resolver {
	x := &Resolver{e: e, dependents: make([][]int, len(e.Agents)), candidate: make([]bool, len(e.Agents))}
	for i, a := range e.Agents {
		for _, d := range a.Dependencies {
			if da := e.Agent(d.AgentName); da != nil {
				x.dependents[da.Index] = append(x.dependents[da.Index], i)
			}
		}
	}
	return x
}

func (x *Resolver) mark(i int) {
	if !x.candidate[i] {
		x.candidate[i] = true
		x.list = append(x.list, i)
	}
}

// Ready returns the agents that are ready at the start of the next turn of
// the run whose state is s, exactly as Resolve(ctx, e, s) would.
func (x *Resolver) Ready(ctx context.Context, s *state.State) (ready []Ready, warnings []Warning, err error) {
	e := x.e
	if !x.started || x.seen > len(s.History()) {
		x.started, x.seen = true, len(s.History())
		clear(x.candidate)
		x.list = x.list[:0]
		for i := range e.Agents {
			x.mark(i)
		}
	}
	for _, rec := range s.History()[x.seen:] {
		a := e.Agent(rec.AgentName)
		if a == nil {
			continue
		}
		x.mark(a.Index)
		// A new output makes success edges fresh, a failure failure edges:
		// either way the dependents are looked at.
		for _, d := range x.dependents[a.Index] {
			x.mark(d)
		}
	}
	x.seen = len(s.History())
	for _, q := range s.Pending() {
		if a := e.Agent(q.Target); a != nil {
			x.mark(a.Index)
		}
	}
	slices.Sort(x.list) // file order
	sc := &x.sc
	sc.reset(ctx, s)
	kept := x.list[:0]
	for _, i := range x.list {
		r, ok, live, err := sc.agent(e, e.Agents[i])
		if err != nil {
			// Interrupted: look at every agent again next time.
			x.started = false
			return nil, nil, err
		}
		if ok {
			ready = append(ready, r)
		}
		if live {
			kept = append(kept, i)
		} else {
			x.candidate[i] = false
		}
	}
	x.list = kept
	return ready, sc.warnings, nil
}
