package batch

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/ensemble-run/ensemble/durable"
	"github.com/ensemble-run/ensemble/engine"
	"github.com/ensemble-run/ensemble/ensemble"
	"github.com/ensemble-run/ensemble/internal/responses"
	"github.com/ensemble-run/ensemble/internal/secrets"
	"github.com/ensemble-run/ensemble/session"
	"github.com/ensemble-run/ensemble/store"
)

// Options are what a front door decides of a batch's runs (Start): the
// options of their session, whether the batch is saved, and the engine
// that plays them.
type Options struct {
	// Session is the options of the runs' session; when it has no
	// injected responses, Refs.Responses are loaded.
	Session session.Options
	// Refs are the injected responses and profiles the runs start with.
	Refs durable.Refs
	// State saves a new batch in the state database at that path, as ID
	// (a new id when ""), with Spec, syncing as Sync (--state).
	State string
	ID    string
	Spec  *Spec
	Sync  store.Sync
	// Saved is a saved batch to finish (batch --resume) instead.
	Saved *Saved
	// Temporal plays every run on that cluster instead of in this process
	// (a workflow a run, whose id is the batch's id and the input's
	// position): a batch neither saved nor with a budget.
	Temporal durable.Temporal
}

// Started is what Start made ready: the RunOne of the batch's inputs and
// what it runs them with.
type Started struct {
	RunOne RunOne
	// Store is the batch as saved (Options.State or Saved); nil: not
	// saved.
	Store *Store
	// OnTemporal is the batch's id on Temporal; "" for a batch played
	// in this process.
	OnTemporal string
	close      func()
}

// Close ends the runs' session (its MCP servers), or lets go of the
// cluster; and the new batch's database.
func (s *Started) Close() { s.close() }

// CreateError is a new batch that its state database refused (Create):
// an *ExistsError, ErrNotDatabase, or the database's own error.
type CreateError struct{ Err error }

func (e *CreateError) Error() string { return e.Err.Error() }
func (e *CreateError) Unwrap() error { return e.Err }

// Start readies a batch of e's inputs as o says: in this process, the
// session of its runs (whose ask agents never ask at a terminal) with
// the injected responses loaded (a *durable.OpenError when it does not
// open), then the new batch in its database (a *CreateError); on Temporal
// (o.Temporal), ErrNoTemporal in a program without the engine,
// durable.ErrTemporalSaved for a batch saved, durable.ErrTemporalStrict
// for a strict one, then what OpenTemporal refuses. The caller closes what it started once the batch has run.
func Start(ctx context.Context, e *ensemble.Ensemble, o Options) (*Started, error) {
	if o.Temporal.On() {
		return startRemote(e, o)
	}
	opts := o.Session
	if f := o.Refs.Responses; f != "" && opts.Models.Responses == nil {
		resp, err := responses.LoadResponsesFor(f, e)
		if err != nil {
			return nil, &durable.OpenError{Err: err}
		}
		opts.Models.Responses, opts.Models.ResponsesFile = resp, f
	}
	sess, err := session.Open(ctx, e, opts)
	if err != nil {
		return nil, &durable.OpenError{Err: err}
	}
	s := &Started{close: func() { sess.Close() }}
	switch {
	case o.Saved != nil:
		s.Store = o.Saved.Store
	case o.State != "":
		st, err := Create(o.State, o.ID, o.Spec, o.Sync)
		if err != nil {
			sess.Close()
			return nil, &CreateError{Err: err}
		}
		s.Store = st
		s.close = func() { st.Close(); sess.Close() }
	}
	s.RunOne = Local(sess, s.Store)
	return s, nil
}

// startRemote is Start on Temporal.
func startRemote(e *ensemble.Ensemble, o Options) (*Started, error) {
	switch {
	case !durable.HasTemporal():
		return nil, durable.ErrNoTemporal
	case o.State != "" || o.Saved != nil:
		return nil, durable.ErrTemporalSaved
	case o.Session.Checks.Strict:
		return nil, durable.ErrTemporalStrict
	}
	m := o.Session.Models
	p, err := durable.OpenTemporal(durable.RemoteSpec{Ensemble: e, Refs: o.Refs, Limits: o.Session.Limits, Live: m.Live, LiveAll: m.LiveAll, Batch: true},
		o.Temporal)
	if err != nil {
		return nil, err
	}
	lookup := o.Session.LookupEnv
	if lookup == nil {
		lookup = os.LookupEnv
	}
	// Each input leaves redacted, as a local run's is (the workflow
	// redacts nothing: its state must not depend on a worker's keys).
	redact := secrets.OfEnsemble(e, lookup).String
	id := fmt.Sprintf("%s-batch-%d", e.Name, time.Now().UnixNano())
	return &Started{OnTemporal: id, close: func() { p.Close() },
		RunOne: func(ctx context.Context, in *Input) (*engine.Result, error) {
			res, _, _, err := p.Play(ctx, fmt.Sprintf("%s-%d", id, in.Index+1), redact(in.Input), nil)
			return res, err
		}}, nil
}
