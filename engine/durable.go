package engine

import (
	"fmt"

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
	return Resume(e, f.State, opts)
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
