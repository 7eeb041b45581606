package engine

import (
	"slices"
	"time"

	"github.com/ensemble-run/ensemble/agent"
	"github.com/ensemble-run/ensemble/state"
)

// Deadlines of questions (docs/semantics.md#answers-that-time-out): when a
// run ends waiting for an ask agent that has a timeout:, the deadline of
// its question (the suspension's time plus the timeout) is saved with the
// run (state.Stopped.Deadlines). A resumed run that waits again for the
// same question keeps its deadline: the question waits since it was first
// asked, however many times the run went on in between. Whoever goes on
// with the run past the deadline (resume, ensemble serve) gives it to the
// run's answers (agent.Answers.WithDeadlines), and the agent's next
// execution applies its on_timeout.

// Deadlines are the deadlines saved with run f that still stand: of the
// agents that have not run since.
func Deadlines(f *state.File) []state.Deadline {
	if f.Stopped == nil || f.State == nil {
		return nil
	}
	var out []state.Deadline
	for _, d := range f.Stopped.Deadlines {
		if f.State.Executions(d.Agent) == d.Executions {
			out = append(out, d)
		}
	}
	return out
}

// AnswerDeadlines are the deadlines that stand in run f by agent, each
// Passed when it is not after now: what a run resumed at now is given
// (agent.Answers.WithDeadlines).
func AnswerDeadlines(f *state.File, now time.Time) map[string]agent.Deadline {
	ds := Deadlines(f)
	if len(ds) == 0 {
		return nil
	}
	out := make(map[string]agent.Deadline, len(ds))
	for _, d := range ds {
		out[d.Agent] = agent.Deadline{At: d.At, Passed: !now.Before(d.At)}
	}
	return out
}

// Passed are the agents whose deadline in run f, waiting for answers, is
// not after now: those whose on_timeout a run resumed now applies.
func Passed(f *state.File, now time.Time) []string {
	if f.CompletionReason != AwaitingInput {
		return nil
	}
	var out []string
	for _, d := range Deadlines(f) {
		if !now.Before(d.At) {
			out = append(out, d.Agent)
		}
	}
	return out
}

// standingDeadlines are the deadlines the run saves with its end: those
// of the questions it ends waiting for, or, when it ends otherwise, those
// it went on with that still stand (a resumed run interrupted before the
// question was asked again keeps its deadline).
func (r *Run) standingDeadlines() []state.Deadline {
	if r.deadlines != nil {
		return slices.Clone(r.deadlines)
	}
	var out []state.Deadline
	for _, d := range r.savedDeadlines {
		if r.st.Executions(d.Agent) == d.Executions {
			out = append(out, d)
		}
	}
	return out
}

// setDeadlines gives each question the run ends waiting for whose agent
// has a timeout its deadline: the one it was saved with when it waited
// already, else now plus the timeout.
func (r *Run) setDeadlines() {
	r.deadlines = []state.Deadline{}
	now := r.now().UTC()
	for i, p := range r.pendingInput {
		a := r.ens.Agent(p.Agent)
		if a == nil || agent.AnswerTimeout(a) <= 0 {
			continue
		}
		timeout := agent.AnswerTimeout(a)
		d := state.Deadline{Agent: a.Name, At: now.Add(timeout), Executions: r.st.Executions(a.Name)}
		for _, s := range r.savedDeadlines {
			if s.Agent == d.Agent && s.Executions == d.Executions {
				d.At = s.At
			}
		}
		r.deadlines = append(r.deadlines, d)
		at := d.At
		r.pendingInput[i].Deadline = &at
	}
}

// savedDeadlinesOf gives the questions of a saved run their saved
// deadlines.
func (r *Run) savedDeadlinesOf(ps []PendingInput) {
	for i, p := range ps {
		for _, d := range r.savedDeadlines {
			if d.Agent == p.Agent && r.st.Executions(d.Agent) == d.Executions {
				at := d.At
				ps[i].Deadline = &at
			}
		}
	}
}
