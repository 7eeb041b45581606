package durable

import (
	"context"

	"github.com/ensemble-run/ensemble/ensemble"
	"github.com/ensemble-run/ensemble/session"
	"github.com/ensemble-run/ensemble/store"
)

// NewOptions are what a front door decides of a new run's saving (run
// --state): the state file, the run's id, what it is started with and how
// the database syncs. A zero Path: the run is not saved.
type NewOptions struct {
	Path string
	ID   string // in a state database; "": a new id
	Refs Refs
	Sync store.Sync
}

// Creation is a new run of an ensemble ready to start (New), saved or
// not: what run does, as Resumption is what resume does.
type Creation struct {
	e     *ensemble.Ensemble
	input string
	save  *Run
}

// New prepares a new run of e with input ("" is the file's), saved as o
// says (Create), before its session opens: a state file that refuses the
// run (an unfinished run in it: *UnfinishedError) does so here. Abandon
// lets it go if it never starts.
func New(e *ensemble.Ensemble, input string, o NewOptions) (*Creation, error) {
	c := &Creation{e: e, input: input}
	if o.Path == "" {
		return c, nil
	}
	var err error
	if c.save, err = Create(o.Path, o.ID, o.Refs, o.Sync); err != nil {
		return nil, err
	}
	return c, nil
}

// Start opens the run's session with opts and prepares the run in it
// (Session.Start) with ro, its saving and id set when it is saved. The
// caller closes the session once the run has run (Run.Run). A session
// that does not open is an *OpenError, as Resumption.Start's.
func (c *Creation) Start(ctx context.Context, opts session.Options, ro session.RunOptions) (*session.Session, *session.Run, error) {
	sess, err := session.Open(ctx, c.e, opts)
	if err != nil {
		return nil, nil, &OpenError{Err: err}
	}
	if c.save != nil {
		ro.Save, ro.RunID = c.save, c.save.ID()
	}
	r, err := sess.Start(c.input, ro)
	if err != nil {
		sess.Close()
		return nil, nil, err
	}
	return sess, r, nil
}

// Save is the run's saving; nil when it is not saved.
func (c *Creation) Save() *Run { return c.save }

// Abandon lets the saved run go when it never ran; it does nothing once
// it ran, nor for a run not saved.
func (c *Creation) Abandon() {
	if c.save != nil {
		c.save.Abandon()
	}
}
