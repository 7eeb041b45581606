package durable

import (
	"context"
	"os"

	"github.com/ensemble-run/ensemble/agent"
	"github.com/ensemble-run/ensemble/ensemble"
	"github.com/ensemble-run/ensemble/internal/responses"
	"github.com/ensemble-run/ensemble/internal/secrets"
	"github.com/ensemble-run/ensemble/session"
	"github.com/ensemble-run/ensemble/store"
)

// NewOptions are what a front door decides of a new run's saving (run
// --state): the state file, the run's id, what it is started with and how
// the database syncs; its recording; and the engine that plays it. A zero
// Path: the run is not saved.
type NewOptions struct {
	Path string
	ID   string // in a state database, or on Temporal; "": a new id
	Refs Refs   // its injected responses (loaded by Start), profiles, recording
	Sync store.Sync
	// Recording is where the run records or replays (opened by Start).
	Recording session.Recording
	// Temporal, when it names a cluster, plays the run there instead of
	// in this process: a run that is durable already (no Path), neither
	// recorded nor replayed, without a budget and not Strict.
	Temporal Temporal
}

// Creation is a new run of an ensemble ready to start (New), saved or
// not, here or on Temporal: what run does, as Resumption is what resume
// does.
type Creation struct {
	e     *ensemble.Ensemble
	input string
	o     NewOptions
	save  *Run
}

// New prepares a new run of e with input ("" is the file's), saved as o
// says (Create), before its session opens: a state file that refuses the
// run (an unfinished run in it: *UnfinishedError) does so here. On
// Temporal (o.Temporal) nothing is created, and what the cluster does not
// play is refused here: ErrNoTemporal in a program without the engine,
// then ErrTemporalSaved, ErrTemporalRecorded. Abandon lets it go if it
// never starts.
func New(e *ensemble.Ensemble, input string, o NewOptions) (*Creation, error) {
	c := &Creation{e: e, input: input, o: o}
	if o.Temporal.On() {
		switch {
		case !HasTemporal():
			return nil, ErrNoTemporal
		case o.Path != "":
			return nil, ErrTemporalSaved
		case o.Recording.Record != "" || o.Recording.Replay != "":
			return nil, ErrTemporalRecorded
		}
		return c, nil
	}
	if o.Path == "" {
		return c, nil
	}
	var err error
	if c.save, err = Create(o.Path, o.ID, o.Refs, o.Sync); err != nil {
		return nil, err
	}
	return c, nil
}

// OnTemporal says whether the run is played on Temporal.
func (c *Creation) OnTemporal() bool { return c.o.Temporal.On() }

// Start starts the run. Here, it loads its injected responses (Refs) and
// opens its recording, unless opts has them already, opens its session
// with opts and prepares the run in it (Session.Start) with ro, its
// saving and id set when it is saved. On Temporal, it refuses opts.Strict
// (ErrTemporalStrict) and a budget, then the cluster's refusals and a
// cluster it cannot reach (OpenTemporal); ro.Events receives the run's
// events as it is played. The caller closes what it started once the run
// has run (Started.Run). A session that does not open, injected responses
// or a recording that do not, is an *OpenError, as Resumption.Start's.
func (c *Creation) Start(ctx context.Context, opts session.Options, ro session.RunOptions) (*Started, error) {
	if c.o.Temporal.On() {
		return c.startRemote(opts, ro)
	}
	if err := c.models(&opts.Models); err != nil {
		return nil, &OpenError{Err: err}
	}
	sess, err := session.Open(ctx, c.e, opts)
	if err != nil {
		return nil, &OpenError{Err: err}
	}
	if c.save != nil {
		ro.Save, ro.RunID = c.save, c.save.ID()
	}
	r, err := sess.Start(c.input, ro)
	if err != nil {
		sess.Close()
		return nil, err
	}
	return &Started{Session: sess, run: r}, nil
}

// models loads the injected responses and opens the recording the
// options of New name, where m has none.
func (c *Creation) models(m *session.Models) error {
	if f := c.o.Refs.Responses; f != "" && m.Responses == nil {
		resp, err := responses.LoadResponsesFor(f, c.e)
		if err != nil {
			return err
		}
		m.Responses, m.ResponsesFile = resp, f
	}
	if m.Recording == (agent.Recording{}) {
		rec, err := c.o.Recording.Open()
		if err != nil {
			return err
		}
		m.Recording = rec
	}
	return nil
}

// startRemote is Start on Temporal.
func (c *Creation) startRemote(opts session.Options, ro session.RunOptions) (*Started, error) {
	if opts.Checks.Strict {
		return nil, ErrTemporalStrict
	}
	p, err := OpenTemporal(RemoteSpec{Ensemble: c.e, Refs: c.o.Refs, Limits: opts.Limits, Live: opts.Models.Live, LiveAll: opts.Models.LiveAll},
		c.o.Temporal)
	if err != nil {
		return nil, err
	}
	id := c.o.ID
	if id == "" {
		id = newID(c.e)
	}
	lookup := opts.LookupEnv
	if lookup == nil {
		lookup = os.LookupEnv
	}
	// The workflow redacts nothing (its state must not depend on a
	// worker's keys): the input leaves here redacted, as a local run's is.
	input := secrets.OfEnsemble(c.e, lookup).String(c.input)
	return &Started{remote: &remoteRun{player: p, id: id, input: input, sink: ro.Events}}, nil
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
