package engine

import (
	"time"

	"github.com/ensemble-run/ensemble/events"
	"github.com/ensemble-run/ensemble/resolver"
	"github.com/ensemble-run/ensemble/runners"
	"github.com/ensemble-run/ensemble/state"
)

// A turn flows resolve → plan → execute → commit (docs/development.md#how-a-turn-flows):
// the resolver says which agents are ready, the planner expands them into
// executions, the executor runs those as a flat list, and the committer
// folds their results back into the state, agent by agent.

// plan is a turn's work: the agents the resolver found ready, in file
// order, and the executions they expand to, grouped by agent in the same
// order. Today every ready agent is one execution. The executor does not
// assume it (it runs a flat list), and the committer takes each agent's
// executions together (committer.agent), so an agent can expand to several,
// unrolled here before anything runs, as a loop over items becomes one
// command per item.
type plan struct {
	ready []resolver.Ready
	execs []execution
}

// execution is one run of one agent's runner: the request as planned, and
// what the executor filled in.
type execution struct {
	agent int                        // index in plan.ready of the agent it executes
	req   *runners.Request           // what the runner is given
	refs  map[string]state.OutputRef // the executions behind req.Dependencies

	res     *runners.Result // set by the executor; nil if it never started
	started time.Time
	took    time.Duration
}

// plan expands the ready agents of a turn into their executions. Every
// request sees the state as it was at the start of the turn.
func (r *Run) plan(turn int, ready []resolver.Ready) plan {
	p := plan{ready: ready, execs: make([]execution, len(ready))}
	for i := range ready {
		x := &p.execs[i]
		x.agent = i
		x.req, x.refs = r.request(turn, ready[i])
	}
	return p
}

// request builds the request of one execution of a ready agent.
func (r *Run) request(turn int, rd resolver.Ready) (*runners.Request, map[string]state.OutputRef) {
	st, a := r.st, rd.Agent
	deps := make(map[string]any, len(rd.Satisfied))
	var refs map[string]state.OutputRef
	for _, d := range rd.Satisfied {
		key := r.ens.Agent(d).StateKey()
		deps[d] = st.AccumulatedContext[key]
		if ref, ok := r.committer.ref(key); ok {
			if refs == nil {
				refs = make(map[string]state.OutputRef, len(rd.Satisfied))
			}
			refs[d] = ref
		}
	}
	var params map[string]any
	for _, q := range rd.Requests {
		if params == nil {
			params = map[string]any{}
		}
		for k, v := range q.Parameters {
			params[k] = v
		}
	}
	return &runners.Request{
		Ensemble:          r.ens,
		Agent:             a,
		Input:             st.Input,
		Turn:              turn,
		Execution:         st.AgentExecutionCount[a.Name] + 1,
		Dependencies:      deps,
		Fresh:             rd.Fresh,
		Context:           st.AccumulatedContext,
		RequestParameters: params,
		Memory:            st.Memory[a.Name],
		Events:            r.agentSink(turn, a.Name),
	}, refs
}

// agentSink stamps an agent's own events (tool calls, text) with its turn.
func (r *Run) agentSink(turn int, agent string) events.Sink {
	if r.opts.Events == nil {
		return nil
	}
	return func(e events.Event) {
		e.Turn, e.Agent = turn, agent
		r.opts.Events.Emit(e)
	}
}
