package durable

import (
	"context"
	"errors"
	"time"

	"github.com/ensemble-run/ensemble/agent"
	"github.com/ensemble-run/ensemble/engine"
	"github.com/ensemble-run/ensemble/ensemble"
	"github.com/ensemble-run/ensemble/internal/answers"
	"github.com/ensemble-run/ensemble/internal/responses"
	"github.com/ensemble-run/ensemble/kinds"
	"github.com/ensemble-run/ensemble/session"
)

// ResumeOptions are what a front door decides about a saved run it
// continues (Prepare): what it overrides of what the run was saved with
// (a zero field keeps the run's), whether it goes on although its files
// changed, and the answers it is given.
type ResumeOptions struct {
	// MaxTurns, Timeout and Parallel replace the run's saved limits when
	// > 0; each cap of Budget that is > 0 replaces the run's saved cap.
	MaxTurns int
	Timeout  time.Duration
	Parallel int
	Budget   *ensemble.Budget
	// Responses is an injected responses file in place of the run's; ""
	// is the run's own, which must not have changed since it was saved.
	Responses string
	// Profiles are profiles files in place of the run's; nil: the run's.
	Profiles []string
	// Recording replaces the run's recording; nil: the run's, added to.
	Recording *session.Recording
	// Force goes on with a run whose ensemble or responses file changed
	// since it was saved (Resumption.Changed says which), and with a run
	// that its budget stopped although no cap is raised.
	Force bool
	// Answers are the answers given to a run that waits for a person, by
	// agent (answers.Parse): an answer for an agent the run does not wait
	// for is an *AnswerError.
	Answers map[string]string
	// LookupEnv and Kinds load the ensemble (session.LoadOptions); nil:
	// os.LookupEnv, the built-in kinds.
	LookupEnv func(string) (string, bool)
	Kinds     *kinds.Registry
	// Loaded, when set, is given the ensemble as soon as it has loaded,
	// before any check: a front door that redacts what it shows learns
	// the keys of the run's profiles there, for the errors that follow.
	Loaded func(*ensemble.Ensemble)
}

// ErrBudgetSpent refuses a run that its budget stopped, resumed with no
// higher cap (ResumeOptions.Budget) and without Force: its stopped turn
// would run again and stop at the same cap, paying again for the requests
// it makes before it (docs/semantics.md#budgets).
var ErrBudgetSpent error = budgetSpent{}

// ChangedFilesError refuses a run whose ensemble file or responses file
// changed since it was saved (without Force): going on would continue a
// run of a different workflow. Changed are the files, each an
// *engine.ChangedError.
type ChangedFilesError struct{ Changed []error }

func (e *ChangedFilesError) Error() string { return errors.Join(e.Changed...).Error() }

// AnswerError is an answer refused (answers.Check): for an agent the run
// does not wait for.
type AnswerError struct{ Err error }

func (e *AnswerError) Error() string { return e.Err.Error() }
func (e *AnswerError) Unwrap() error { return e.Err }

// OpenError is the session of a resumed run that did not open
// (session.Open): an MCP server that did not start, a tool it lacks, an
// agent named by Live that the ensemble has not. A
// *session.InterruptedError is one too, wrapped.
type OpenError struct{ Err error }

func (e *OpenError) Error() string { return e.Err.Error() }
func (e *OpenError) Unwrap() error { return e.Err }

// Resumption is a saved run ready to go on (Prepare): its ensemble as it
// loads now, checked against the run, and what the run goes on with.
type Resumption struct {
	Saved    *Saved
	Ensemble *ensemble.Ensemble
	// Changed are the files of the run that changed since it was saved
	// (each an *engine.ChangedError), which Force let through: a front
	// door warns of them.
	Changed []error
	// Refs are what the run goes on with, saved with it for later resumes.
	Refs Refs

	limits  session.Options // MaxTurns, Timeout, Parallel, Budget, Responses, Recording
	answers map[string]string
	save    *Run
}

// Prepare readies saved's run (Open, OpenFork) to go on, as every front
// door that resumes a run does: it refuses a run that its budget stopped
// (ErrBudgetSpent), loads its ensemble file as it is now with the run's
// profiles (a load error explained by Saved.LoadError), refuses a run
// that does not fit it (a *state.FileError) or whose files changed (a
// *ChangedFilesError), and answers for agents the run does not wait for
// (an *AnswerError); then it reads what the run goes on with: its limits,
// budget, injected responses and recording, as it was saved but for what
// o overrides. Nothing is written: Start does.
func Prepare(saved *Saved, o ResumeOptions) (*Resumption, error) {
	sf := saved.File
	raised := o.Budget != nil && !o.Budget.Empty()
	if sf.CompletionReason == engine.BudgetExceeded && !o.Force && !raised {
		return nil, ErrBudgetSpent
	}
	refs := SavedRefs(sf)
	if o.Profiles != nil {
		refs.Profiles = o.Profiles
	}
	e, err := session.Load(sf.Ensemble.Path, nil, session.LoadOptions{Kinds: o.Kinds, Profiles: refs.Profiles, LookupEnv: o.LookupEnv})
	if err != nil {
		return nil, saved.LoadError(err)
	}
	if o.Loaded != nil {
		o.Loaded(e)
	}
	checked := refs.Responses // the saved run's: it must not have changed
	if o.Responses != "" {
		refs.Responses, checked = o.Responses, ""
	}
	changed, err := saved.Check(e, checked)
	if err != nil {
		return nil, err
	}
	if len(changed) > 0 && !o.Force {
		return nil, &ChangedFilesError{Changed: changed}
	}
	if err := answers.Check(e, sf, o.Answers); err != nil {
		return nil, &AnswerError{Err: err}
	}
	recording := session.SavedRecording(sf.Options.Recording)
	if o.Recording != nil {
		recording = *o.Recording
	}
	if refs.Recording, err = recording.Saved(); err != nil {
		return nil, err
	}
	p := &Resumption{Saved: saved, Ensemble: e, Changed: changed, Refs: refs, answers: o.Answers}
	p.limits = session.Options{Limits: session.Limits{
		MaxTurns: orSaved(o.MaxTurns, sf.Options.MaxTurns),
		Timeout:  orSaved(o.Timeout, sf.Options.Timeout()),
		Parallel: orSaved(o.Parallel, sf.Options.Parallel),
	}}
	b := ensemble.Budget{MaxTokens: sf.Options.MaxTokens, MaxRequests: sf.Options.MaxRequests, MaxCost: sf.Options.MaxCost}
	if raised {
		b = ensemble.Budget{MaxTokens: orSaved(o.Budget.MaxTokens, b.MaxTokens), MaxRequests: orSaved(o.Budget.MaxRequests, b.MaxRequests),
			MaxCost: orSaved(o.Budget.MaxCost, b.MaxCost)}
	}
	if !b.Empty() {
		p.limits.Limits.Budget = &b
	}
	if refs.Responses != "" {
		resp, err := responses.LoadResponsesFor(refs.Responses, e)
		if err != nil {
			return nil, err
		}
		p.limits.Models.Responses, p.limits.Models.ResponsesFile = resp, refs.Responses
	}
	var rec agent.Recording
	if rec, err = recording.Open(); err != nil {
		return nil, err
	}
	p.limits.Models.Recording = rec
	return p, nil
}

// orSaved is o when it is set (> 0), else saved.
func orSaved[T int | float64 | time.Duration](o, saved T) T {
	if o > 0 {
		return o
	}
	return saved
}

// Start goes on with the run: it saves it from now on (Saved.Continue,
// which adds a fork to its database), opens its session with opts, the
// front door's options (its terminal or Suspend, streaming, tracer, the
// environment...) but for the run's limits, budget, injected responses
// and recording, which are Prepare's, and prepares the run from its saved
// state (Session.Resume) with ro, its events, and the answers, its id and
// its saving set. The caller closes the session once the run has run
// (Run.Run), and lets the saved run go (Saved.Close). A session that does
// not open is an *OpenError.
func (p *Resumption) Start(ctx context.Context, opts session.Options, ro session.RunOptions) (*session.Session, *session.Run, error) {
	l := p.limits
	opts.Limits = l.Limits
	opts.Models.Responses, opts.Models.ResponsesFile, opts.Models.Recording = l.Models.Responses, l.Models.ResponsesFile, l.Models.Recording
	save, err := p.Saved.Continue(p.Refs)
	if err != nil {
		return nil, nil, err
	}
	sess, err := session.Open(ctx, p.Ensemble, opts)
	if err != nil {
		save.Abandon()
		return nil, nil, &OpenError{Err: err}
	}
	ro.Save, ro.RunID, ro.Answers = save, save.ID(), p.answers
	r, err := sess.Resume(p.Saved.File, ro)
	if err != nil {
		sess.Close()
		save.Abandon()
		return nil, nil, err
	}
	p.save = save
	return sess, r, nil
}

// Save is the saving of the run Start started (nil before): its id, and
// whether its database holds other unfinished runs once it has run.
func (p *Resumption) Save() *Run { return p.save }
