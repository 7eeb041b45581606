package engine

import (
	"context"
	"errors"
	"slices"
	"time"

	"github.com/ensemble-run/ensemble/agent"
	"github.com/ensemble-run/ensemble/events"
	"github.com/ensemble-run/ensemble/internal/resolver"
)

// Ask agents that wait (docs/semantics.md#ask-agents-that-wait): an
// execution whose runner returns agent.ErrAwaitingInput is taken out of its
// turn before the commit, as if its agent had not been ready: it is not
// counted, consumes nothing and leaves no record. The turn's other
// executions commit (a turn left with none commits nothing), and when the
// agent is still ready after the commit the run ends awaiting_input, its
// PendingInput naming what the answer will be given.

// AwaitingInput is the completion reason of a run whose ask agents wait
// for answers given to resume.
const AwaitingInput = "awaiting_input"

// ExitAwaitingInput is its exit code.
const ExitAwaitingInput = 5

// PendingInput is a question waiting for its answer: the result's
// pending_input and the input_requested event.
type PendingInput struct {
	Agent    string `json:"agent"`
	Question string `json:"question"`
	// Dependencies are what the answered execution is given (and what the
	// person should read), by dependency name.
	Dependencies map[string]any `json:"dependencies"`
	// Turn is the turn the answer will be recorded in.
	Turn int `json:"turn"`
	// Deadline is when the question stops waiting (the agent's timeout:,
	// deadline.go); nil: it waits as long as it takes.
	Deadline *time.Time `json:"deadline,omitempty"`
}

// suspend takes the executions that wait for an answer out of p, with
// their agents, and returns those agents' names.
func suspend(p *plan) []string {
	var names []string
	waits := map[int]bool{}
	for _, x := range p.execs {
		if x.res != nil && errors.Is(x.res.Err, agent.ErrAwaitingInput) && p.fans[x.agent] == nil {
			waits[x.agent] = true
		}
	}
	if len(waits) == 0 {
		return nil
	}
	index := make([]int, len(p.ready)) // old index in p.ready → new one
	ready := p.ready[:0:0]
	for i, rd := range p.ready {
		if waits[i] {
			names = append(names, rd.Agent.Name)
			index[i] = -1
			continue
		}
		index[i] = len(ready)
		ready = append(ready, rd)
	}
	execs := p.execs[:0:0]
	for _, x := range p.execs {
		if index[x.agent] >= 0 {
			x.agent = index[x.agent]
			execs = append(execs, x)
		}
	}
	var fans map[int]*fanPlan
	for i, f := range p.fans {
		if index[i] >= 0 {
			if fans == nil {
				fans = map[int]*fanPlan{}
			}
			fans[index[i]] = f
		}
	}
	p.ready, p.execs, p.fans = ready, execs, fans
	return names
}

// PendingInput lists the questions waiting for an answer in a run that
// ended awaiting_input: its agents that ask a person and are ready to run
// in the next turn, in file order, each with what it will be given. It only
// reads the state.
func (r *Run) PendingInput() []PendingInput {
	out := r.pending(nil)
	r.savedDeadlinesOf(out)
	return out
}

// pending is PendingInput, limited to the agents named in only when it is
// not nil.
func (r *Run) pending(only []string) []PendingInput {
	ctx := context.Background()
	ready, _, err := resolver.New(r.ens).Ready(ctx, r.st)
	if err != nil {
		return nil
	}
	var out []PendingInput
	turn := r.st.TurnCount + 1
	for _, rd := range ready {
		a := rd.Agent
		if only != nil && !slices.Contains(only, a.Name) || only == nil && !agent.AsksHuman(a) {
			continue
		}
		if rd.Skip != resolver.Run {
			continue // skipped, not asked (docs/semantics.md#guards-that-skip)
		}
		var x execution
		r.request(ctx, turn, rd, &x, &readNotes{}) // its notes are the turn's, which plans it again
		out = append(out, PendingInput{Agent: a.Name, Question: agent.Question(a), Dependencies: x.req.Dependencies, Turn: turn})
	}
	return out
}

// awaitInput ends a turn some of whose agents wait for an answer: when they
// are still ready, each gets its input_requested event and the run ends
// awaiting_input.
func (r *Run) awaitInput(names []string) string {
	r.pendingInput = r.pending(names)
	if len(r.pendingInput) == 0 {
		return ""
	}
	r.setDeadlines()
	for _, p := range r.pendingInput {
		r.opts.Events.Emit(events.Event{Type: events.InputRequested, Turn: p.Turn, Agent: p.Agent,
			Question: p.Question, Dependencies: p.Dependencies, Deadline: p.Deadline})
	}
	return AwaitingInput
}
