// Package resolver decides which agents are ready at the start of a turn
// (docs/semantics.md#when-an-agent-is-ready). It is read-only: it reads the
// state and returns decisions, never writes the state, and does no I/O. The
// engine's committer does the bookkeeping of what the ready agents consumed
// (state.Consume), from the decisions returned here.
//
// # Semantics
//
// An agent A is ready when
//
//  1. it has executed fewer than conversation.max_turns times (a MaxTurns of 0,
//     as in a hand-built ensemble, means the default, 1) and fewer than
//     conversation_limits.max_agent_executions[A] where set; and
//  2. it has no dependencies and has never executed; or
//  3. every required edge is satisfied and at least one satisfied edge is
//     fresh (for an agent with trigger: all, every required edge is fresh);
//     or
//  4. a pending agent request targets it.
//
// An edge A←D is satisfied when D has at least one successful output
// (state.OutputCount[D] > 0; D's output lives under D's state key but is
// counted by D's name), the edge has triggered A fewer than max_executions
// times (0: unlimited) and its condition is true (no condition: true). It is
// fresh when D has produced an output A has not consumed
// (OutputCount[D] > Edges[A][D].Consumed).
//
// Conditions are evaluated lazily: not for agents excluded by their limits,
// not for edges whose dependency has no output or whose max_executions is
// spent, and not at all for an agent that has no candidate fresh edge and no
// pending request. Required edges are evaluated before optional ones, and a
// false required edge stops the evaluation of that agent's other edges unless
// a request makes it ready anyway. A condition that fails at run time counts
// as false and yields a Warning. Evaluation is interrupted when the context
// given to Resolve is done: Resolve then returns the context's error, and no
// agents.
//
// When A executes (successfully or not), the engine's committer records
// that A consumed the outputs behind its satisfied edges (Ready.Satisfied
// and Ready.Outputs), counts one trigger for each edge that was fresh
// (Ready.Fresh), and removes the requests that made it ready
// (Ready.Requests). An edge triggers A whenever A executes with that edge
// satisfied and fresh, whatever else made A ready: a fresh output that A
// received is a trigger.
//
// An agent ready through a request gets the outputs of its satisfied edges
// like any other. A request for an agent that has reached its limits is
// never honoured; it stays pending (harmlessly) in the state.
//
// # Skips
//
// A ready agent is skipped instead of run (Ready.Skip,
// docs/semantics.md#guards-that-skip) when it was not requested and every
// required edge delivers a skip of its dependency, or else when its when:
// guard is false (a guard that fails counts as false, with a Warning). A
// skip is a round of the agent: its skips count with its executions
// towards its limits and rule 2. A required edge from it counts the skip in
// its sequence, so that a dependent sees a new, empty, delivery (null): a
// join runs with what its other dependencies delivered. The sequence of an
// edge is the dependency's outputs (on: success), its failures (on:
// failure), or its executions (on: always), and on a required edge other
// than on: failure its skips too.
package resolver

import (
	"context"

	"github.com/ensemble-run/ensemble/ensemble"
	"github.com/ensemble-run/ensemble/internal/conditions"
	"github.com/ensemble-run/ensemble/internal/opaque"
	"github.com/ensemble-run/ensemble/state"
)

// Ready is an agent that runs this turn.
type Ready struct {
	Agent *ensemble.Agent
	// Satisfied names the dependencies whose edges are satisfied, in file
	// order: their outputs are delivered to the agent, and consumed by it.
	Satisfied []string
	// Fresh names the satisfied edges whose output is new to the agent (a
	// subset of Satisfied, in file order); each counts as a trigger of its edge.
	Fresh []string
	// Requests are the pending agent requests targeting the agent, in the
	// order they were made, whether or not the agent was also ready otherwise.
	Requests []state.AgentRequest

	// Outputs[i] is the sequence number of Satisfied[i]'s edge when the
	// agent was resolved (its OutputCount, plus its skips; see settled):
	// the output of that dependency the agent receives, and so consumes,
	// even if the dependency produces another before the turn is committed.
	Outputs []int

	// Skip says whether the agent is skipped instead of run, and why.
	Skip Skip
}

// Skip is why a ready agent is skipped instead of run
// (docs/semantics.md#guards-that-skip); Run when it runs.
type Skip uint8

const (
	Run              Skip = iota // not skipped
	SkipWhen                     // its when: guard is false
	SkipDependencies             // every edge that delivers to it delivers a skip
)

// settled is the sequence number of d's latest delivery on its edge: what
// the edge counts, to be fresh and satisfied. A required edge counts the
// dependency's skips too; an optional one does not (a skip never makes an
// agent run through an optional edge, so a loop closed by one ends).
func settled(s *state.State, d *ensemble.Dependency) int {
	n, skips := d.AgentName, 0
	if d.RequiresAll {
		skips = s.Skips(n)
	}
	switch {
	case d.OnFailure:
		return s.Executions(n) - s.Outputs(n)
	case d.OnAlways:
		return s.Executions(n) + skips
	default:
		return s.Outputs(n) + skips
	}
}

// DeliversSkip reports whether the edge d delivers a skip of its
// dependency: it is a required edge and the latest record it counts is a
// skip.
func DeliversSkip(s *state.State, d *ensemble.Dependency) bool {
	if d.OnFailure || !d.RequiresAll {
		return false
	}
	r := s.LastSettled(d.AgentName, d.OnAlways, true)
	return r != nil && r.Skipped
}

// Warning is a condition (or a when: guard) that failed at run time and so
// counted as false.
type Warning struct {
	Agent      string // the agent whose dependency it is
	Dependency string // the dependency: the edge is Agent ← Dependency; "" for a guard
	Expression string // the condition's source
	Message    string // the error, one line
	// Miss is set for a read of a missing key (Message is then empty):
	// the condition did not fail, but read null there
	// (docs/semantics.md#reads-of-missing-keys).
	Miss *conditions.Miss
}

// edge is the scratch state of one dependency edge during Resolve.
type edge struct {
	dep      *ensemble.Dependency
	outputs  int // OutputCount[dep]
	consumed int
	status   uint8
}

const (
	edgeOut       uint8 = iota // not satisfied
	edgeCandidate              // has output and triggers left; condition not yet known
	edgeSatisfied
)

// fresh: the dependency has an output the agent has not consumed.
func (ed *edge) fresh() bool { return ed.outputs > ed.consumed }

// Resolve returns the agents that are ready at the start of the next turn, in
// file order, and the warnings of conditions that failed. The conditions'
// environment is built from s only if a condition needs it. Resolve does not
// modify s. When ctx is done during a condition's evaluation, Resolve returns
// ctx's error.
//
// Resolve looks at every agent. A run calls a Resolver's Ready instead,
// which looks only at the agents whose readiness may have changed.
func Resolve(ctx context.Context, e *ensemble.Ensemble, s *state.State) (ready []Ready, warnings []Warning, err error) {
	sc := newScan(ctx, s)
	for _, a := range e.Agents {
		r, ok, _, err := sc.agent(e, a)
		if err != nil {
			return nil, nil, err
		}
		if ok {
			ready = append(ready, r)
		}
	}
	return ready, sc.warnings, nil
}

// scan is one resolution: the pending requests by target, the conditions'
// environment (built on first use) and scratch space.
type scan struct {
	ctx      context.Context
	s        *state.State
	requests map[string][]state.AgentRequest
	env      *conditions.Env
	envBuf   conditions.Env // what env points to
	scratch  []edge
	warnings []Warning
	reads    conditions.Reads // the misses of the evaluation under way
}

func newScan(ctx context.Context, s *state.State) *scan {
	sc := &scan{}
	sc.reset(ctx, s)
	return sc
}

// reset readies sc for a resolution of s, keeping its scratch space and
// the memory of its requests map: a Resolver's turns reuse one scan.
func (sc *scan) reset(ctx context.Context, s *state.State) {
	sc.ctx, sc.s, sc.env, sc.warnings = ctx, s, nil, nil
	clear(sc.requests) // the lists already handed out in a Ready stay theirs
	if len(s.Pending()) > 0 {
		if sc.requests == nil {
			sc.requests = make(map[string][]state.AgentRequest, len(s.Pending()))
		}
		for _, q := range s.Pending() {
			sc.requests[q.Target] = append(sc.requests[q.Target], q)
		}
	}
}

// agent applies the rules to one agent, in the order of
// docs/semantics.md#when-an-agent-is-ready: whether it is ready (and with
// what), and whether it may become ready later without a new output of one
// of its dependencies or a new request (live): it is within its limits and
// has a fresh edge, or has no dependencies and never ran.
func (sc *scan) agent(e *ensemble.Ensemble, a *ensemble.Agent) (r Ready, ready, live bool, err error) {
	if !withinLimits(e, sc.s, a) {
		return Ready{}, false, false, nil
	}
	if r, ready, live, err = sc.rules(a); err != nil || !ready {
		return r, ready, live, err
	}
	r.Skip, err = sc.skip(a, &r)
	return r, ready, live, err
}

// skip decides whether the ready agent a is skipped instead of run
// (docs/semantics.md#guards-that-skip): when every edge that delivers to it
// delivers a skip (unless a request made it ready), or when its guard is
// false.
func (sc *scan) skip(a *ensemble.Agent, r *Ready) (Skip, error) {
	if len(r.Requests) == 0 && len(r.Satisfied) > 0 {
		// Ready through its dependencies: every required edge is satisfied.
		required, skipped := 0, 0
		for _, d := range a.Dependencies {
			if d.RequiresAll {
				required++
				if DeliversSkip(sc.s, d) {
					skipped++
				}
			}
		}
		if required > 0 && skipped == required {
			return SkipDependencies, nil
		}
	}
	if opaque.Get(a.WhenProgram) == nil {
		return Run, nil
	}
	ok, err := sc.eval(a, opaque.Get(a.WhenProgram), "", a.When)
	if err != nil || ok {
		return Run, err
	}
	return SkipWhen, nil
}

// rules are rules 2 to 4: whether a is ready, its limits aside.
func (sc *scan) rules(a *ensemble.Agent) (r Ready, ready, live bool, err error) {
	s := sc.s
	reqs := sc.requests[a.Name]
	requested := len(reqs) > 0 // rule 4
	if len(a.Dependencies) == 0 {
		never := s.Executions(a.Name)+s.Skips(a.Name) == 0 // rule 2
		return Ready{Agent: a, Requests: reqs}, requested || never, never, nil
	}

	// Rule 3: every required edge is satisfied and a satisfied edge is
	// fresh. First without conditions: could the agent be ready at all?
	edges, blocked, fresh := sc.edges(a, requested)
	if blocked && !requested {
		// A required edge has nothing to deliver; nor is the agent live:
		// only an output of that dependency can change it.
		return Ready{}, false, false, nil
	}
	live = fresh
	viaDeps := !blocked && fresh
	if !viaDeps && !requested {
		return Ready{}, false, live, nil
	}
	// Then the conditions, as few as the answer needs.
	if viaDeps, err = sc.conditions(a, edges, viaDeps, requested); err != nil {
		return Ready{}, false, false, err
	}
	if !viaDeps && !requested {
		return Ready{}, false, live, nil // a required edge's condition is false
	}
	nSat, nFresh := count(edges)
	if nFresh == 0 && !requested {
		return Ready{}, false, live, nil // the fresh edges all had false conditions
	}
	return delivered(a, edges, nSat, nFresh, reqs), true, true, nil
}

// edges reads the agent's edges as far as they are known without their
// conditions: each one whose dependency has an output and whose
// max_executions is not spent is a candidate. blocked: a required edge is
// not a candidate (or, with trigger: all, not fresh), so the agent cannot be
// ready through its dependencies (the scan stops there unless the agent was
// requested). fresh: a candidate edge
// brings an output the agent has not consumed.
func (sc *scan) edges(a *ensemble.Agent, requested bool) (edges []edge, blocked, fresh bool) {
	if cap(sc.scratch) < len(a.Dependencies) {
		sc.scratch = make([]edge, len(a.Dependencies), max(len(a.Dependencies), 16))
	}
	edges = sc.scratch[:len(a.Dependencies)]
	bookkeeping := sc.s.Edges(a.Name)
	for i, d := range a.Dependencies {
		ed := edge{dep: d, outputs: settled(sc.s, d)}
		if es := bookkeeping[d.AgentName]; es != nil {
			ed.consumed = es.Consumed
			if d.MaxExecutions > 0 && es.Triggered >= d.MaxExecutions {
				ed.outputs = 0 // spent: the edge cannot be satisfied
			}
		}
		if ed.outputs > 0 {
			ed.status = edgeCandidate
			fresh = fresh || ed.fresh()
			if a.TriggerAll && d.RequiresAll && !ed.fresh() {
				// trigger: all waits for a new output on every required
				// edge: only this dependency's next output can change that.
				blocked = true
				if !requested {
					return nil, true, fresh
				}
			}
		} else if d.RequiresAll {
			blocked = true
			if !requested {
				return nil, true, fresh
			}
		}
		edges[i] = ed
	}
	return edges, blocked, fresh
}

// conditions decides the candidate edges by their conditions (an edge
// that delivers a skip has none to test), required edges first, and returns whether the agent can still be ready through its
// dependencies. A false required edge settles that, and stops the
// evaluation unless the agent was requested (it then receives its other
// satisfied edges).
func (sc *scan) conditions(a *ensemble.Agent, edges []edge, viaDeps, requested bool) (bool, error) {
	for _, required := range [2]bool{true, false} {
		for i := range edges {
			ed := &edges[i]
			if ed.status != edgeCandidate || ed.dep.RequiresAll != required {
				continue
			}
			ok := true
			// A skip delivers no output to test: the edge is settled
			// (docs/semantics.md#guards-that-skip), as its select is not
			// evaluated either.
			if opaque.Get(ed.dep.Program) != nil && !DeliversSkip(sc.s, ed.dep) {
				var err error
				if ok, err = sc.holds(a, ed.dep); err != nil {
					return false, err
				}
			}
			if ok {
				ed.status = edgeSatisfied
				continue
			}
			ed.status = edgeOut
			if required {
				viaDeps = false
				if !requested {
					return false, nil // not ready: skip the other conditions
				}
			}
		}
	}
	return viaDeps, nil
}

// holds evaluates the condition of a's edge from d. The environment is
// built on first use, the history only for a condition that reads it. A
// condition that fails counts as false, with a warning; an error is
// returned only when the scan's context is done.
func (sc *scan) holds(a *ensemble.Agent, d *ensemble.Dependency) (bool, error) {
	return sc.eval(a, opaque.Get(d.Program), d.AgentName, d.Condition)
}

// eval evaluates a condition of a's edge from dep, or a's guard (dep ""),
// whose source is src.
func (sc *scan) eval(a *ensemble.Agent, p *conditions.Program, dep, src string) (bool, error) {
	if sc.env == nil {
		sc.envBuf = envOf(sc.s)
		sc.envBuf.Reads = &sc.reads
		sc.env = &sc.envBuf
	}
	if p.UsesHistory && sc.env.History == nil {
		sc.env.History = sc.s.HistoryValues()
	}
	ok, err := p.EvalContext(sc.ctx, sc.env)
	if err != nil && sc.ctx.Err() != nil {
		sc.reads.Take()
		return false, sc.ctx.Err()
	}
	for _, m := range sc.reads.Take() {
		sc.warnings = append(sc.warnings, Warning{Agent: a.Name, Dependency: dep, Expression: src, Miss: &m})
	}
	if err != nil {
		sc.warnings = append(sc.warnings, Warning{Agent: a.Name, Dependency: dep,
			Expression: src, Message: err.Error()})
		return false, nil
	}
	return ok, nil
}

// count counts the satisfied edges, and the fresh ones among them.
func count(edges []edge) (nSat, nFresh int) {
	for i := range edges {
		if edges[i].status == edgeSatisfied {
			nSat++
			if edges[i].fresh() {
				nFresh++
			}
		}
	}
	return nSat, nFresh
}

// delivered is the Ready of a: its satisfied edges, the output of each and
// the fresh ones, in file order, and the requests that target it.
func delivered(a *ensemble.Agent, edges []edge, nSat, nFresh int, reqs []state.AgentRequest) Ready {
	r := Ready{Agent: a, Requests: reqs}
	if nSat == 0 {
		return r
	}
	names := make([]string, nSat+nFresh)
	r.Satisfied, r.Fresh = names[:0:nSat], names[nSat:nSat]
	r.Outputs = make([]int, 0, nSat)
	for i := range edges {
		ed := &edges[i]
		if ed.status != edgeSatisfied {
			continue
		}
		r.Satisfied = append(r.Satisfied, ed.dep.AgentName)
		r.Outputs = append(r.Outputs, ed.outputs)
		if ed.fresh() {
			r.Fresh = append(r.Fresh, ed.dep.AgentName)
		}
	}
	return r
}

// HeldBack lists the agents, in file order, that would be ready but for
// rule 1: they have run as often as conversation.max_turns (or
// max_agent_executions) lets them, and a dependency has a new output for
// them, or a request is pending. A run that completes with such an agent
// likely meant a loop to go round again (docs/semantics.md). Conditions
// that fail count as false, as in Resolve; it does not modify s.
func HeldBack(ctx context.Context, e *ensemble.Ensemble, s *state.State) ([]*ensemble.Agent, error) {
	sc := newScan(ctx, s)
	var out []*ensemble.Agent
	for _, a := range e.Agents {
		if withinLimits(e, s, a) || len(a.Dependencies) == 0 && len(sc.requests[a.Name]) == 0 {
			continue // an agent without dependencies is ready again only when asked
		}
		if _, ok, _, err := sc.rules(a); err != nil {
			return nil, err
		} else if ok {
			out = append(out, a)
		}
	}
	return out, nil
}

// withinLimits is rule 1: the agent may execute again. Its skips count
// with its executions: each is one of its rounds.
func withinLimits(e *ensemble.Ensemble, s *state.State, a *ensemble.Agent) bool {
	n := s.Executions(a.Name) + s.Skips(a.Name)
	maxTurns := a.Conversation.MaxTurns
	if maxTurns <= 0 {
		maxTurns = ensemble.DefaultMaxTurns
	}
	if n >= maxTurns {
		return false
	}
	if m, ok := e.Limits.MaxAgentExecutions[a.Name]; ok && n >= m {
		return false
	}
	return true
}

// envOf is the conditions' environment; History is added by the first
// condition that names it.
func envOf(s *state.State) conditions.Env {
	return conditions.Env{
		Context:    s.Context(),
		TurnCount:  s.TurnCount,
		Executions: s.ExecutionCounts(),
		Input:      s.Input,
	}
}
