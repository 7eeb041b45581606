package engine

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/ensemble-run/ensemble/agent"
	"github.com/ensemble-run/ensemble/ensemble"
	"github.com/ensemble-run/ensemble/events"
	"github.com/ensemble-run/ensemble/state"
)

// BudgetExceeded is the completion reason of a run that a budget stopped
// (docs/semantics.md#budgets).
const BudgetExceeded = "budget_exceeded"

// budget keeps the run's spend on model requests and refuses a request once
// a cap is reached (docs/semantics.md#budgets). The engine owns the totals:
// every execution reserves through it before each model request, and adds
// what the request used when it returns. A reservation counts as a request
// at once (so max_requests is never passed, however many executions run at
// once); tokens and cost are known only when a request returns, so the run
// can go over max_tokens or max_cost by what the requests already in flight
// when the cap was reached use, never by more.
type budget struct {
	mu     sync.Mutex
	run    *ensemble.Budget
	agents map[string]*ensemble.Budget
	total  spend
	per    map[string]*spend
	events events.Sink

	turn   int
	cancel context.CancelCauseFunc // the current turn's
	hit    error                   // why a request was refused; nil while none was
	// parent is the budget of the execution a child ensemble's run belongs
	// to (Options.Parent); nil at the top.
	parent agent.Budget
}

// spend is what was spent, and the requests in flight.
type spend struct {
	used     state.Usage
	inflight int
}

// errBudget is the cause a turn is cancelled with when a request was refused.
type errBudget struct{ msg string }

func (e *errBudget) Error() string { return e.msg }

// Is makes every budget refusal ErrBudgetExceeded.
func (e *errBudget) Is(target error) bool { return target == ErrBudgetExceeded }

// ErrBudgetExceeded matches (errors.Is) every refusal of a model request by
// a budget, and the failure of an execution whose child ensemble a budget
// stopped: such a failure is never retried.
var ErrBudgetExceeded = errors.New("budget exceeded")

// newBudget makes the run's budget: the file's caps, each replaced by the
// override's when it sets one, and the spend of the state's history.
func newBudget(e *ensemble.Ensemble, override *ensemble.Budget, st *state.State, sink events.Sink) *budget {
	b := &budget{agents: map[string]*ensemble.Budget{}, per: map[string]*spend{}, events: sink}
	var run ensemble.Budget
	if e.Limits.Budget != nil {
		run = *e.Limits.Budget
	}
	if override != nil {
		if override.MaxTokens > 0 {
			run.MaxTokens = override.MaxTokens
		}
		if override.MaxRequests > 0 {
			run.MaxRequests = override.MaxRequests
		}
		if override.MaxCost > 0 {
			run.MaxCost = override.MaxCost
		}
	}
	if !run.Empty() {
		b.run = &run
	}
	for _, a := range e.Agents {
		if !a.Budget.Empty() {
			b.agents[a.Name] = a.Budget
		}
	}
	for _, rec := range st.History() {
		b.add(recordAgent(rec), rec.Usage)
	}
	return b
}

// recordAgent is the agent a record's spend counts for: a fan-out
// instance's counts for its agent.
func recordAgent(rec *state.Record) string {
	if rec.Of != "" {
		return rec.Of
	}
	return rec.AgentName
}

func (b *budget) add(name string, u *state.Usage) {
	if u == nil {
		return
	}
	b.total.used.Add(u)
	s := b.per[name]
	if s == nil {
		s = &spend{}
		b.per[name] = s
	}
	s.used.Add(u)
}

// active reports whether a cap binds the run's executions: without one,
// nothing reserves, so nothing cancels a turn (see forAgent).
func (b *budget) active() bool {
	return b.run != nil || len(b.agents) > 0 || b.parent != nil
}

// startTurn arms the budget for a turn: a refused request cancels it.
func (b *budget) startTurn(turn int, cancel context.CancelCauseFunc) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.turn, b.cancel = turn, cancel
}

// exceeded is why a request was refused, or nil.
func (b *budget) exceeded() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.hit
}

// over says which cap of c the spend s has reached, or "".
func over(c *ensemble.Budget, s *spend) string {
	switch {
	case c == nil:
		return ""
	case c.MaxRequests > 0 && s.used.Requests+s.inflight >= c.MaxRequests:
		return fmt.Sprintf("max_requests %d reached (%d made)", c.MaxRequests, s.used.Requests)
	case c.MaxTokens > 0 && s.used.Tokens() >= c.MaxTokens:
		return fmt.Sprintf("max_tokens %d reached (%d used)", c.MaxTokens, s.used.Tokens())
	case c.MaxCost > 0 && s.used.Cost >= c.MaxCost:
		return fmt.Sprintf("max_cost %g reached (%s spent)", c.MaxCost, formatCost(s.used.Cost))
	}
	return ""
}

func formatCost(c float64) string { return fmt.Sprintf("%.6g", c) }

// forAgent is the agent.Budget of one execution of the named agent.
func (b *budget) forAgent(name string) agent.Budget {
	if b.run == nil && b.agents[name] == nil && b.parent == nil {
		return nil
	}
	return agentBudget{b: b, name: name}
}

type agentBudget struct {
	b    *budget
	name string
}

// Reserve implements agent.Budget.
func (ab agentBudget) Reserve() (func(*state.Usage), error) {
	b := ab.b
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.hit != nil {
		return nil, b.hit
	}
	s := b.per[ab.name]
	if s == nil {
		s = &spend{}
		b.per[ab.name] = s
	}
	why := ""
	if w := over(b.run, &b.total); w != "" {
		why = "the run's budget is spent: " + w
	} else if w := over(b.agents[ab.name], s); w != "" {
		why = fmt.Sprintf("agent %q's budget is spent: %s", ab.name, w)
	}
	var parentDone func(*state.Usage)
	if why == "" && b.parent != nil {
		done, err := b.parent.Reserve() // the parent's caps bind a child's run
		if err != nil {
			why = "the parent's budget: " + strings.TrimPrefix(err.Error(), "budget exceeded: ")
		}
		parentDone = done
	}
	if why != "" {
		b.hit = &errBudget{msg: "budget exceeded: " + why}
		b.events.Emit(events.Event{Type: events.BudgetExceeded, Turn: b.turn, Agent: ab.name, Message: b.hit.Error(),
			Spend: map[string]state.Usage{"run": b.total.used, "agent": s.used}})
		if b.cancel != nil {
			b.cancel(b.hit)
		}
		return nil, b.hit
	}
	s.inflight++
	b.total.inflight++
	var once sync.Once
	return func(u *state.Usage) {
		once.Do(func() {
			b.mu.Lock()
			defer b.mu.Unlock()
			s.inflight--
			b.total.inflight--
			if u != nil {
				b.total.used.Add(u)
				s.used.Add(u)
			}
			if parentDone != nil {
				parentDone(u)
			}
		})
	}, nil
}

// isBudget reports whether err is a budget's refusal.
func isBudget(err error) bool { return errors.Is(err, ErrBudgetExceeded) }

// usageByAgent is each agent's spend over the run, the executions of an
// interrupted turn included (their requests were made): the agents that
// made model requests only; nil when none did.
func (r *Run) usageByAgent() map[string]*state.Usage {
	var m map[string]*state.Usage
	add := func(name string, u *state.Usage) {
		if u == nil || (u.Requests == 0 && u.Tokens() == 0 && u.Cost == 0) {
			return
		}
		if m == nil {
			m = map[string]*state.Usage{}
		}
		if m[name] == nil {
			m[name] = &state.Usage{}
		}
		m[name].Add(u)
	}
	for _, rec := range r.st.History() {
		add(recordAgent(rec), rec.Usage)
	}
	for name, u := range r.interruptedByAgent {
		add(name, u)
	}
	return m
}

func (r *Run) addInterruptedUsage(name string, u *state.Usage) {
	if u == nil {
		return
	}
	if r.interruptedByAgent == nil {
		r.interruptedByAgent = map[string]*state.Usage{}
	}
	if r.interruptedByAgent[name] == nil {
		r.interruptedByAgent[name] = &state.Usage{}
	}
	r.interruptedByAgent[name].Add(u)
}

// savedBudget is the budget override of a resumed run: each cap of o (the
// command line's) where it sets one, else the saved run's.
func savedBudget(o *ensemble.Budget, saved state.Options) *ensemble.Budget {
	b := ensemble.Budget{MaxTokens: saved.MaxTokens, MaxRequests: saved.MaxRequests, MaxCost: saved.MaxCost}
	if o != nil {
		if o.MaxTokens > 0 {
			b.MaxTokens = o.MaxTokens
		}
		if o.MaxRequests > 0 {
			b.MaxRequests = o.MaxRequests
		}
		if o.MaxCost > 0 {
			b.MaxCost = o.MaxCost
		}
	}
	if b.Empty() {
		return nil
	}
	return &b
}
