package serve

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/ensemble-run/ensemble/durable"
	"github.com/ensemble-run/ensemble/engine"
	"github.com/ensemble-run/ensemble/ensemble"
	"github.com/ensemble-run/ensemble/events"
	"github.com/ensemble-run/ensemble/state"
)

// Engine runs a server's runs outside its process (Options.Engine): on a
// Temporal cluster, whose workers play the turns (package temporalengine,
// Remote; docs/serve.md#runs-on-temporal). The server keeps each run in
// its state database as it does a local one, saving each turn as the
// engine reports it, so that the API, the inspector and a restart read
// the same rows; the engine's own run is the one that goes on.
type Engine interface {
	// Name names the engine in messages ("Temporal").
	Name() string
	// Check refuses an ensemble the engine does not run as the local
	// engine does; the server does not serve it.
	Check(e *ensemble.Ensemble) error
	// Start starts run id.
	Start(ctx context.Context, id string, r RemoteRun) error
	// Follow follows run id until it ends or waits for an answer (its
	// events numbered from "from", the engine's numbering, have gone by
	// and it waits), or until ctx is done. Each event after from goes to
	// sink; progress is given the run's state file each time it read a
	// new one (an error from it stops the following). It returns the
	// run's state file when it ended or waits (its completion reason
	// says which), and the number of the next event either way.
	Follow(ctx context.Context, id string, from int, sink events.Sink, progress func(*state.File) error) (*state.File, int, error)
	// Answer gives the answer text to agent's next question in run id.
	Answer(ctx context.Context, id, agent, text string) error
	// Cancel stops run id for good, wherever it stands.
	Cancel(ctx context.Context, id string) error
}

// ErrRunExists is the error (wrapped) of Engine.Start for a new run whose
// id the engine has already, of a run this server did not start: the run
// is left interrupted for good (the server never adopts the other one).
var ErrRunExists = errors.New("the engine has a run of that id already")

// RemoteRun is what an Engine starts a run with.
type RemoteRun struct {
	Ensemble *ensemble.Ensemble
	// Input is the run's input, redacted.
	Input string
	// Responses is the injected responses file ("" none); Profiles the
	// profiles files.
	Responses string
	Profiles  []string
	// Again marks a run the server may have started before it stopped:
	// a run of that id on the engine is the one, followed as it is.
	Again bool
}

// errNoFork refuses a fork on an engine that keeps its runs itself.
func (rs *Runs) errNoFork() error {
	return errorf(CodeConflict, "fork: a run on %s cannot be forked (the engine's run goes on from its own state, not from a saved turn): serve without --temporal to fork runs", rs.o.Engine.Name())
}

// checkEngine drops from list the ensembles the engine does not run,
// each told to Skipped with its reason.
func checkEngine(o *Options, list []*served) ([]*served, error) {
	if o.Engine == nil {
		return list, nil
	}
	list = slices.DeleteFunc(list, func(s *served) bool {
		err := o.Engine.Check(s.e)
		if err != nil {
			o.skipped(s.e.Path, err)
		}
		return err != nil
	})
	if len(list) == 0 {
		return nil, fmt.Errorf("no ensemble to serve on %s", o.Engine.Name())
	}
	return list, nil
}

// startRemote saves run id of s (its turn 0) as a local start does, then
// launches it on the engine: it starts there once a slot is free. It holds
// a place in the queue (reserve); release undoes its idempotency key.
func (rs *Runs) startRemote(s *served, id, text string, so StartOptions, release func()) (string, bool, error) {
	fail := func(err error) (string, bool, error) {
		rs.unreserve()
		release()
		return "", false, err
	}
	d, err := durable.CreateIn(rs.wdb, id, s.refs)
	if err != nil {
		return fail(err)
	}
	kept := so.Webhook != "" || so.IdempotencyKey != ""
	if kept {
		if err := rs.j.setMeta(id, &meta{Ensemble: s.e.Name, Webhook: so.Webhook, Key: so.IdempotencyKey}); err != nil {
			d.Abandon()
			return fail(err)
		}
	}
	input := s.secrets.String(text)
	f := engine.New(s.e, input, engine.Options{}).File("")
	if err := d.Begin(s.e, f); err != nil {
		d.Abandon()
		if kept {
			rs.j.removeMeta(id)
		}
		if _, ok := errors.AsType[*durable.UnfinishedError](err); ok {
			return fail(errorf(CodeConflict, "run_id %q is taken: %s", id, rs.redact(err.Error())))
		}
		return fail(err)
	}
	start := &RemoteRun{Ensemble: s.e, Input: input, Responses: s.responses, Profiles: rs.o.Profiles}
	rs.launchRemote(id, s.e.Name, d, f.State, start, nil)
	if err := rs.commit(); err != nil { // saved before it is answered for
		return "", false, err
	}
	return id, true, nil
}

// launchRemote follows run id on the engine in the background (starting
// it first when start is set), from the engine's event the journal says
// it stopped at, each turn saved through d from begun; after (nil:
// nothing) is called once it stops.
func (rs *Runs) launchRemote(id, name string, d *durable.Run, begun *state.State, start *RemoteRun, after func()) {
	abandon := func() {
		d.Abandon()
		if rs.cancelledByCaller(id) { // before its turn came
			rs.cancelRemote(id)
		}
	}
	rs.launchWith(id, func(ctx context.Context) (*engine.Result, error) {
		return nil, rs.followRemote(ctx, id, name, d, begun, start)
	}, false, abandon, after)
}

// followRemote is the life of a run on the engine in this server: the
// engine's turns saved as they come, its end or its wait for an answer
// saved as a local run's are. A run a caller cancelled is stopped on the
// engine too; one the server's shutdown cut short is left as it is there,
// and followed again at the next start.
func (rs *Runs) followRemote(ctx context.Context, id, name string, d *durable.Run, begun *state.State, start *RemoteRun) error {
	eng := rs.o.Engine
	if start != nil {
		if err := eng.Start(ctx, id, *start); err != nil {
			d.Abandon()
			err = fmt.Errorf("starting it on %s: %w", eng.Name(), err)
			if errors.Is(err, ErrRunExists) {
				// Not again at the next start either (goOnRemote would
				// take the other run for this one).
				msg := rs.redact(err.Error())
				err = errors.Join(err, rs.j.updateMeta(id, name, func(m *meta) { m.EngineRefused = msg }))
			}
			return err
		}
	}
	last := begun
	from := 0
	if m := rs.j.meta(id); m != nil {
		from = m.EngineEvents
	}
	sf, next, err := eng.Follow(ctx, id, from, rs.sink(id), func(f *state.File) error {
		if f.State.TurnCount <= last.TurnCount {
			return nil
		}
		last = f.State
		return d.AfterTurn(f.State)
	})
	rs.setEngineEvents(id, name, next)
	switch {
	case err == nil:
		return d.Finish(sf.State, sf.CompletionReason, sf.Stopped)
	case rs.cancelledByCaller(id):
		cctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		return errors.Join(eng.Cancel(cctx, id), d.Finish(last, engine.Cancelled, nil))
	}
	d.Abandon()
	if ctx.Err() != nil {
		return nil // a shutdown: followed again at the next start
	}
	return fmt.Errorf("following it on %s: %w", eng.Name(), err)
}

// cancelledByCaller reports whether a caller cancelled run id while it
// went on here.
func (rs *Runs) cancelledByCaller(id string) bool {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	a := rs.active[id]
	return a != nil && a.user
}

// setEngineEvents keeps in the journal the engine's number of the next
// event of run id: a run followed again (answered, or after a restart)
// passes on only the events after it.
func (rs *Runs) setEngineEvents(id, name string, next int) {
	if m := rs.j.meta(id); m != nil && m.EngineEvents == next || m == nil && next == 0 {
		return
	}
	if err := rs.j.updateMeta(id, name, func(m *meta) { m.EngineEvents = next }); err != nil {
		rs.logf("run %s: %s", id, err)
	}
}

// goOnRemote goes on with saved, a run of the engine, as goOn does with a
// local one: answered (given), or after a restart (given nil). The checks
// are resume's (durable.Prepare: the files unchanged, each answer for an
// agent the run waits for, of its schema); the answers then go to the
// engine's run, and the server follows it again.
func (rs *Runs) goOnRemote(saved *durable.Saved, given map[string]string) error {
	p, err := durable.Prepare(saved, durable.ResumeOptions{Answers: given, LookupEnv: rs.o.LookupEnv})
	if err != nil {
		saved.Close()
		return errorf(CodeConflict, "%s", rs.redact(err.Error()))
	}
	if err := rs.reserve(); err != nil {
		saved.Close()
		return err
	}
	sf, id := saved.File, saved.Info.ID
	goesOn := *sf // as a resumed run begins: going on, nothing cut short
	goesOn.CompletionReason, goesOn.Stopped = "", nil
	d, err := saved.Continue(p.Refs)
	if err == nil {
		err = d.Begin(p.Ensemble, &goesOn)
		if err != nil {
			d.Abandon()
		}
	}
	if err != nil {
		rs.unreserve()
		saved.Close()
		return err
	}
	var start *RemoteRun
	if len(given) == 0 {
		// After a restart: the server may have stopped before the engine
		// had the run.
		start = &RemoteRun{Ensemble: p.Ensemble, Input: sf.State.Input, Responses: p.Refs.Responses, Profiles: p.Refs.Profiles, Again: true}
	}
	agents := make([]string, 0, len(given))
	for a := range given {
		agents = append(agents, a)
	}
	slices.Sort(agents)
	for _, a := range agents {
		if err := rs.o.Engine.Answer(rs.ctx, id, a, given[a]); err != nil {
			// Nothing went on: the run waits as it did.
			ferr := d.Finish(sf.State, sf.CompletionReason, sf.Stopped)
			rs.unreserve()
			saved.Close()
			return errors.Join(fmt.Errorf("answering run %s on %s: %w", id, rs.o.Engine.Name(), err), ferr)
		}
	}
	rs.launchRemote(id, p.Ensemble.Name, d, sf.State, start, saved.Close)
	return nil
}

// cancelRemote stops run id on the engine once a caller cancelled it
// while it waited for an answer: nothing would answer it any more.
func (rs *Runs) cancelRemote(id string) {
	if rs.o.Engine == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := rs.o.Engine.Cancel(ctx, id); err != nil {
		rs.logf("run %s: cancelling it on %s: %s", id, rs.o.Engine.Name(), rs.redact(err.Error()))
	}
}
