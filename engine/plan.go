package engine

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/ensemble-run/ensemble/agent"
	"github.com/ensemble-run/ensemble/ensemble"
	"github.com/ensemble-run/ensemble/events"
	"github.com/ensemble-run/ensemble/internal/conditions"
	"github.com/ensemble-run/ensemble/internal/jsonvalue"
	"github.com/ensemble-run/ensemble/internal/opaque"
	"github.com/ensemble-run/ensemble/internal/resolver"
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
	fans  map[int]*fanPlan // by index in ready: the fan-out agents (fanout.go)
	// notes are the reads of missing keys of the turn's selects,
	// templates and lists, which the committer records (missing.go).
	notes readNotes
}

// execution is one run of one agent's runner: the request as planned, and
// what the executor filled in.
type execution struct {
	agent   int                        // index in plan.ready of the agent it executes
	req     *agent.Request             // what the runner is given
	refs    map[string]state.OutputRef // the executions behind req.Dependencies
	handles []state.ExecutionRef       // the failures delivered through on: failure edges
	// failed is set when planning failed the execution (a select that
	// failed): the executor does not run it.
	failed error
	// gate orders and caps the instances of a fan-out (fanout.go); nil
	// for other executions.
	gate *fanGate

	res *agent.Result // set by the executor; nil if it never started
	// ownEnd is set when the execution ended before its turn's context
	// did: its result, a failure included, is its own, not the stop's.
	ownEnd  bool
	started time.Time
	took    time.Duration
}

// plan expands the ready agents of a turn into their executions. Every
// request sees the state as it was at the start of the turn.
func (r *Run) plan(ctx context.Context, turn int, ready []resolver.Ready) plan {
	p := plan{ready: ready, execs: make([]execution, 0, len(ready)), notes: readNotes{known: r.committer.seenWarning}}
	for i := range ready {
		if ready[i].Skip != resolver.Run {
			continue // skipped: no execution, only a record (committer.skip)
		}
		p.execs = append(p.execs, execution{agent: i})
		r.request(ctx, turn, ready[i], &p.execs[len(p.execs)-1], &p.notes)
	}
	r.expand(ctx, turn, &p)
	return p
}

// request builds the request of one execution of a ready agent: what each
// satisfied edge delivers (the dependency's output; its latest failure for
// an on: failure edge; what its select makes of either). A select that
// fails sets x.failed: the execution fails without running.
func (r *Run) request(ctx context.Context, turn int, rd resolver.Ready, x *execution, notes *readNotes) {
	st, a := r.st, rd.Agent
	deps := make(map[string]any, len(rd.Satisfied))
	var refs map[string]state.OutputRef
	var skipped []string
	edges := a.Dependencies // Satisfied is in their order
	for _, d := range rd.Satisfied {
		key := r.ens.Agent(d).StateKey()
		deps[d] = st.Context()[key]
		for len(edges) > 0 && edges[0].AgentName != d {
			edges = edges[1:]
		}
		var dep *ensemble.Dependency
		if len(edges) > 0 {
			dep = edges[0]
		}
		failure := dep != nil && dep.OnFailure
		if dep != nil && !dep.OnFailure {
			// The latest delivery may be a skip (null, never selected
			// from), or, on an on: always edge, a failure.
			if last := st.LastSettled(d, dep.OnAlways, dep.RequiresAll); last != nil && last.Skipped {
				deps[d] = nil
				skipped = append(skipped, d)
				continue
			} else if last != nil && dep.OnAlways && last.Error != nil && last.OutputData == nil {
				failure = true
			}
		}
		if failure {
			if f := st.LastFailure(d); f != nil {
				deps[d] = map[string]any{"error": deref(f.Error), "agent": d, "execution": float64(f.Execution)}
				x.handles = append(x.handles, state.ExecutionRef{AgentName: d, Execution: f.Execution})
			}
		}
		if sel := selectOf(dep); sel != nil {
			v, err := sel.EvalContext(ctx, notes.env(selectEnv(st, sel.UsesHistory)), deps[d])
			notes.take(a.Name, fmt.Sprintf("select of %s ← %s", a.Name, d), d, false)
			if err == nil {
				err = jsonvalue.Valid(v) // NaN and ±Inf (from a division by 0) have no JSON
			}
			if err != nil && x.failed == nil {
				x.failed = fmt.Errorf("select of dependency %q (%s) failed: %w", d, dep.Select, err)
			}
			deps[d] = v
			continue // what was delivered is not the output: never by reference
		}
		if failure {
			continue // a failure is short, and not in the history as an output
		}
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
	x.refs = refs
	x.req = &agent.Request{
		Ensemble:          r.ens,
		Agent:             a,
		Input:             st.Input,
		Turn:              turn,
		Execution:         st.Executions(a.Name) + 1,
		Dependencies:      deps,
		Fresh:             rd.Fresh,
		Skipped:           skipped,
		Context:           st.Context(),
		RequestParameters: params,
		Memory:            st.Memory(a.Name),
		Events:            r.agentSink(turn, a.Name),
	}
	if len(a.Templates) > 0 && a.FanOut == nil && x.failed == nil {
		// A fan-out agent's templates are its instances' (expand).
		vals, err := templates(ctx, a, notes.env(templateEnv(st, a)), nil, notes)
		if err != nil {
			x.failed = err
		}
		x.req.Templates = vals
	}
}

// templateEnv is the conditions' environment for a's templates, as the
// turn starts.
func templateEnv(st *state.State, a *ensemble.Agent) *conditions.Env {
	history := false
	for _, t := range a.Templates {
		history = history || opaque.Get(t.Program).UsesHistory()
	}
	return selectEnv(st, history)
}

// selectOf is dep's compiled select; nil for none, or no dep.
func selectOf(dep *ensemble.Dependency) *conditions.Select {
	if dep == nil {
		return nil
	}
	return opaque.Get(dep.SelectProgram)
}

// templates evaluates a's templates (docs/semantics.md#what-an-agent-receives)
// over env and, for a fan-out instance, its item. An error names the agent
// and the template. The reads of missing keys, and a null message, are
// noted in notes (env notes its reads there).
func templates(ctx context.Context, a *ensemble.Agent, env *conditions.Env, item *conditions.Item, notes *readNotes) (map[string]any, error) {
	vals := make(map[string]any, len(a.Templates))
	for _, t := range a.Templates {
		v, err := opaque.Get(t.Program).EvalContext(ctx, env, item)
		notes.take(a.Name, t.Field+" of "+a.Name, "", true)
		if err == nil {
			notes.nullMessage(a, t, v)
		}
		if err != nil {
			return nil, fmt.Errorf("%s of agent %q (a template) failed: %w", t.Field, a.Name, err)
		}
		vals[t.Field] = v
	}
	return vals, nil
}

// selectEnv is the conditions' environment for a select, as the turn starts.
func selectEnv(st *state.State, history bool) *conditions.Env {
	env := &conditions.Env{Context: st.Context(), TurnCount: st.TurnCount, Executions: st.ExecutionCounts(), Input: st.Input}
	if history {
		env.History = st.HistoryValues()
	}
	return env
}

// agentSink stamps an agent's own events (tool calls, text) with its turn.
func (r *Run) agentSink(turn int, agent string) events.Sink {
	if r.opts.Events == nil {
		return nil
	}
	return func(e events.Event) {
		e.Turn = turn
		if !strings.HasPrefix(e.Agent, agent+"/") { // a child ensemble's agent keeps its path
			e.Agent = agent
		}
		r.opts.Events.Emit(e)
	}
}
