package engine

import (
	"fmt"
	"slices"

	"github.com/ensemble-run/ensemble/ensemble"
	"github.com/ensemble-run/ensemble/state"
)

// Durable runs (docs/semantics.md#durable-runs), driven turn by turn as llm4s's runStep:
//
//	r := engine.New(e, input, opts)          // start
//	for reason := ""; reason == ""; {
//		reason = r.Step(ctx)                 // one turn
//		state.Save(path, r.File(reason))     // save after it
//	}
//	f, _ := state.Load(path)                 // load
//	r = engine.FromFile(e, f, opts)          // and go on where it stopped
//
// Options.AfterTurn is the hook for saving when the run is driven by Run.

// File returns the state file of the run as it stands, after its last
// committed turn: the ensemble's path and hash, the overrides the run was
// given (Options.MaxTurns, Timeout, Parallel) and the state itself (shared,
// not copied: save it before the next turn). reason is the run's completion
// reason, or "" while it goes on. The caller adds the responses and profiles
// files it used.
func (r *Run) File(reason string) *state.File {
	f := &state.File{
		Ensemble:         state.FileRef{Name: r.ens.Name, Path: r.ens.Path, SHA256: r.ens.Hash},
		Options:          state.Options{MaxTurns: r.opts.MaxTurns, Parallel: r.opts.Parallel},
		CompletionReason: reason,
		State:            r.st,
	}
	f.Options.SetTimeout(r.opts.Timeout)
	if b := r.opts.Budget; b != nil {
		f.Options.MaxTokens, f.Options.MaxRequests, f.Options.MaxCost = b.MaxTokens, b.MaxRequests, b.MaxCost
	}
	return f
}

// FromFile prepares a run that continues the one saved in f, from its last
// completed turn: a turn that was interrupted runs again, a completed one
// never does. The overrides recorded in f apply unless opts sets its own.
// It does not compare e with the file the state was saved from: see
// CheckEnsemble.
//
// A run that had ended continues as any other: when nothing is ready it
// completes at once with the same result; one stopped by max_total_turns
// stops again unless opts.MaxTurns raises the limit; one stopped by a
// timeout or a cancellation plays its interrupted turn again, with a fresh
// timeout.
func FromFile(e *ensemble.Ensemble, f *state.File, opts Options) *Run {
	if opts.MaxTurns == 0 {
		opts.MaxTurns = f.Options.MaxTurns
	}
	if opts.Timeout == 0 {
		opts.Timeout = f.Options.Timeout()
	}
	if opts.Parallel == 0 {
		opts.Parallel = f.Options.Parallel
	}
	opts.Budget = savedBudget(opts.Budget, f.Options)
	r := Resume(e, f.State, opts)
	r.savedDeadlines = Deadlines(f)
	return r
}

// CheckEnsemble returns a *ChangedError when e is not the ensemble file f was
// saved from: its contents (sha256) differ.
func CheckEnsemble(e *ensemble.Ensemble, f *state.File) error {
	if e.Hash == f.Ensemble.SHA256 {
		return nil
	}
	return &ChangedError{What: "ensemble file", Path: e.Path, Saved: f.Ensemble.SHA256, Current: e.Hash}
}

// ChangedError is a file that changed since a state was saved from it:
// resuming would continue a run of a different workflow.
type ChangedError struct {
	What           string // "ensemble file", "responses file"
	Path           string
	Saved, Current string // sha256 of the contents then and now
}

func (e *ChangedError) Error() string {
	return fmt.Sprintf("the %s %s has changed since the state was saved (sha256 %.12s…, now %.12s…)",
		e.What, e.Path, e.Saved, e.Current)
}

// Stopped is what the run reported of the turn it cut short, never
// committed (its executions in the result's errors, what their requests
// spent), for its saver to keep with its completion reason: the result of
// the saved run is then the one this run printed (SavedResult). nil when
// no turn was cut short.
func (r *Run) Stopped() *state.Stopped {
	u := r.interruptedUsage
	spent := u.Requests != 0 || u.Tokens() != 0 || u.Cost != 0
	deadlines := r.standingDeadlines()
	if len(r.interrupted) == 0 && !spent && len(r.expectations) == 0 && len(deadlines) == 0 {
		return nil
	}
	s := &state.Stopped{Errors: slices.Clone(r.interrupted), Expectations: slices.Clone(r.expectations), Deadlines: deadlines}
	if spent {
		s.Usage = &u
		for name, a := range r.interruptedByAgent {
			if a.Requests == 0 && a.Tokens() == 0 && a.Cost == 0 {
				continue
			}
			if s.UsageByAgent == nil {
				s.UsageByAgent = map[string]*state.Usage{}
			}
			c := *a
			s.UsageByAgent[name] = &c
		}
	}
	return s
}

// SavedResult is the result of the run saved in f as of its last completed
// turn, as the invocation that saved it last printed it: its state, and
// what it reported of a turn it cut short (f.Stopped). No agent runs.
// (A run that goes on from f, FromFile, plays that turn again and reports
// only what it does itself.)
func SavedResult(e *ensemble.Ensemble, f *state.File) (*Run, *Result) {
	r := FromFile(e, f, Options{})
	if s := f.Stopped; s != nil {
		r.interrupted = slices.Clone(s.Errors)
		r.interruptedUsage.Add(s.Usage)
		for name, u := range s.UsageByAgent {
			r.addInterruptedUsage(name, u)
		}
		r.expectations = slices.Clone(s.Expectations)
	}
	return r, r.Result(f.CompletionReason)
}
