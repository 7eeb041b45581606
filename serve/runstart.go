package serve

// Starting a run: Start, and the machinery that runs it in the
// background once a slot is free (launch).

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/ensemble-run/ensemble/durable"
	"github.com/ensemble-run/ensemble/engine"
	"github.com/ensemble-run/ensemble/ensemble"
	"github.com/ensemble-run/ensemble/events"
	"github.com/ensemble-run/ensemble/kinds/ask"
	"github.com/ensemble-run/ensemble/session"
	"github.com/ensemble-run/ensemble/store"
)

// Start starts a run of the ensemble name with input (the file's input
// when nil) and returns its id; created is false when IdempotencyKey
// names a run started before, whose id it is. The run is saved (its turn
// 0) before Start returns, so that a server killed at once goes on with it
// when it starts again; it then waits for a slot, and runs.
func (rs *Runs) Start(ctx context.Context, name string, input *string, so StartOptions) (id string, created bool, err error) {
	s := rs.byName[name]
	if s == nil {
		return "", false, errorf(CodeNotFound, "no ensemble %q is served%s", name, ensemble.Suggest(name, rs.names()))
	}
	if so.RunID != "" && !runIDPattern.MatchString(so.RunID) {
		return "", false, errorf(CodeBadRequest, "run_id %q: use 1 to 64 letters, digits, '.', '_' or '-', starting with a letter or digit", so.RunID)
	}
	if so.Webhook != "" {
		if err := rs.checkWebhook(so.Webhook); err != nil {
			return "", false, err
		}
	}
	id = so.RunID
	if id == "" {
		id = store.NewID()
	}
	if so.IdempotencyKey != "" {
		rs.keyMu.Lock()
		defer rs.keyMu.Unlock()
		if owner, err := rs.claimStartKey(so.IdempotencyKey, id); err != nil || owner != id {
			return owner, false, err
		}
	}
	if so.RunID != "" {
		unclaim, err := rs.claimRunID(id, so.IdempotencyKey)
		if err != nil {
			return "", false, err
		}
		defer unclaim()
	}
	release := func() {
		if so.IdempotencyKey != "" {
			rs.j.releaseKey(so.IdempotencyKey)
		}
	}
	if err := rs.reserve(); err != nil {
		release()
		return "", false, err
	}
	text := s.e.Input
	if input != nil {
		text = *input
	}
	if rs.o.Engine != nil {
		return rs.startRemote(s, id, text, so, release) // engine.go
	}
	return rs.startHere(s, id, text, so, release)
}

// claimStartKey binds an idempotency key to run id (keyMu held), and
// returns the run the key names: id, or a run started before with it.
func (rs *Runs) claimStartKey(key, id string) (owner string, err error) {
	owner, claimed, err := rs.j.claimKey(key, id)
	if err != nil || claimed {
		return owner, err
	}
	if _, err := rs.info(owner); err == nil {
		return owner, nil
	}
	// A server killed between the key and the run's first save: the key
	// made no run, and makes this one.
	rs.j.releaseKey(key)
	if _, _, err := rs.j.claimKey(key, id); err != nil {
		return "", err
	}
	return id, nil
}

// claimRunID lets one start at a time have run id, which a caller named
// (or the loser's cleanup would undo the winner's journal), and refuses
// an id the database holds; unclaim lets it go. key, the start's
// idempotency key, is released when it is refused.
func (rs *Runs) claimRunID(id, key string) (unclaim func(), err error) {
	rs.mu.Lock()
	busy := rs.starting[id]
	rs.starting[id] = true
	rs.mu.Unlock()
	if busy {
		if key != "" {
			rs.j.releaseKey(key)
		}
		return nil, errorf(CodeConflict, "run_id %q is being started by another request", id)
	}
	unclaim = func() {
		rs.mu.Lock()
		delete(rs.starting, id)
		rs.mu.Unlock()
	}
	if _, err := rs.info(id); err == nil {
		unclaim()
		if key != "" {
			rs.j.releaseKey(key)
		}
		// The database would let a new run take a finished one's place.
		return nil, errorf(CodeConflict, "run_id %q is taken: name another, or leave it out", id)
	}
	return unclaim, nil
}

// startHere starts a run of s on this server's own engine: Start once
// the run has its id and its place in the queue (release lets its
// idempotency key go when it does not start).
func (rs *Runs) startHere(s *served, id, text string, so StartOptions, release func()) (string, bool, error) {
	d, err := durable.CreateIn(rs.wdb, id, s.refs)
	if err != nil {
		rs.unreserve()
		release()
		return "", false, err
	}
	opts, err := rs.sessionOptions(s)
	if err != nil {
		d.Abandon()
		rs.unreserve()
		release()
		return "", false, err
	}
	opts.Models.Stream = so.Stream
	sess, done, err := rs.runSession(s, opts) // sessions.go
	if err != nil {
		d.Abandon()
		rs.unreserve()
		release()
		return "", false, errorf(CodeConflict, "%s", rs.redact(err.Error()))
	}
	// What the database does not hold goes beside it before the run is
	// saved: a server killed between the two goes on with the run, webhook
	// and all.
	kept := so.Webhook != "" || so.IdempotencyKey != ""
	if !kept {
		rs.j.noMeta(id)
	}
	if kept {
		if err := rs.j.setMeta(id, &meta{Ensemble: s.e.Name, Webhook: so.Webhook, Key: so.IdempotencyKey}); err != nil {
			done()
			d.Abandon()
			rs.unreserve()
			release()
			return "", false, err
		}
	}
	r, err := sess.StartExact(text, session.RunOptions{Events: rs.runSink(id), Save: journaled{d, rs.j, rs.j.log(id)}, RunID: id})
	if err != nil {
		done()
		rs.unreserve()
		release()
		if kept {
			rs.j.removeMeta(id)
		}
		if _, ok := errors.AsType[*durable.UnfinishedError](err); ok {
			return "", false, errorf(CodeConflict, "run_id %q is taken: %s", id, rs.redact(err.Error()))
		}
		return "", false, err
	}
	rs.launchWith(id, r.Run, true, r.Abandon, done)
	if !so.Waited {
		if err := rs.commit(); err != nil { // saved before it is answered for
			return "", false, err
		}
	}
	return id, true, nil
}

func (rs *Runs) names() []string {
	out := make([]string, 0, len(rs.list))
	for _, s := range rs.list {
		out = append(out, s.e.Name)
	}
	return out
}

// sessionOptions are the options of a served run's session: no terminal,
// an ask agent suspends the run; s's injected responses when it has them.
func (rs *Runs) sessionOptions(s *served) (session.Options, error) {
	o := session.Options{LookupEnv: rs.o.LookupEnv, Environ: rs.environ, Secrets: rs.secretValues,
		Ask: ask.Options{Out: io.Discard, NoInput: true, Suspend: true}}
	if s != nil && s.resp != nil {
		o.Models.Responses, o.Models.ResponsesFile = s.resp, s.responses // each run takes them from the first
	}
	return o, nil
}

// reserve takes a place in the queue, or refuses: the queue is full, or
// the server is closing.
func (rs *Runs) reserve() error {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	if rs.closing {
		return errorf(CodeClosing, "the server is shutting down: try again once it is back")
	}
	if rs.queued >= rs.o.MaxQueue {
		return errorf(CodeBusy, "%d runs wait for a slot already (--max-queue): try again later", rs.queued)
	}
	rs.queued++
	return nil
}

func (rs *Runs) unreserve() {
	rs.mu.Lock()
	rs.queued--
	rs.mu.Unlock()
}

// sink is the events sink of run id: each event, redacted, appended to its
// log.
func (rs *Runs) sink(id string) events.Sink {
	return func(ev events.Event) { rs.emit(id, ev, false) }
}

// runSink is sink for a new run saved through journaled: its events wait
// to be written until it saves or someone reads them (journalbuf.go).
func (rs *Runs) runSink(id string) events.Sink {
	return func(ev events.Event) {
		if ev.Type == events.RunCompleted {
			rs.writeAhead(id, &ev) // resultbuf.go
		}
		rs.emit(id, ev, true)
	}
}

// launch goes on with r, a run prepared in sess and holding a place in the
// queue (reserve), in the background: once a slot is free, it runs to its
// end (or suspension); then after (nil: nothing) lets its saved run go,
// and its webhook is called.
func (rs *Runs) launch(id string, sess *session.Session, r *session.Run, after func()) {
	// A run that goes on from a saved one (after) returns only what it
	// ran: its result is read back from the database.
	rs.launchWith(id, r.Run, after == nil, r.Abandon, func() {
		sess.Close()
		if after != nil {
			after()
		}
	})
}

// launchWith goes on with run id, holding a place in the queue, in the
// background: once a slot is free, run runs it to its end (or
// suspension), and its result is kept for a caller who waits when keep;
// when no slot came (the server closes, or a caller cancelled it),
// abandon lets it go as saved. Then after (nil: nothing) is called, and
// its webhook.
func (rs *Runs) launchWith(id string, run func(context.Context) (*engine.Result, error), keep bool, abandon, after func()) {
	ctx, cancel := context.WithCancel(rs.ctx)
	a := &active{status: StatusQueued, cancel: cancel, done: make(chan struct{})}
	rs.mu.Lock()
	if rs.closing {
		// Close waits already: let the run go as saved, here, rather than
		// add to what it waits for.
		rs.queued--
		rs.mu.Unlock()
		cancel()
		abandon()
		if after != nil {
			after()
		}
		rs.j.drop(id)
		return
	}
	rs.active[id] = a
	rs.wg.Add(1) // under mu: Close sets closing under mu, then waits
	rs.mu.Unlock()
	rs.work.do(func() {
		defer rs.wg.Done()
		defer cancel()
		ran := false
		select {
		case rs.slots <- struct{}{}:
			ran = true
		case <-rs.stop:
		case <-ctx.Done():
		}
		rs.mu.Lock()
		rs.queued--
		if ran && !a.user && rs.ctx.Err() == nil {
			a.status = StatusRunning
		} else if ran {
			<-rs.slots
			ran = false
		}
		rs.mu.Unlock()
		suspended := false
		if ran {
			res, err := run(ctx)
			rs.j.flush() // any event its saves did not write (journalbuf.go)
			if cerr := rs.commit(); err == nil {
				err = cerr
			}
			// A remote run returns no result: notify checks for itself.
			suspended = res == nil || res.CompletionReason == engine.AwaitingInput
			written := rs.takeWritten(id, res)
			if err == nil && keep {
				a.res, a.written = res, written
			}
			<-rs.slots
			if err != nil {
				rs.logf("run %s: %s", id, rs.redact(err.Error()))
			}
		} else {
			abandon() // saved as it was: it goes on when the server starts again
		}
		if after != nil {
			after()
		}
		rs.mu.Lock()
		delete(rs.active, id)
		user := a.user
		rs.mu.Unlock()
		close(a.done)
		rs.j.drop(id)
		if user || ran && rs.ctx.Err() == nil {
			rs.hook(id, user) // not for a run a shutdown interrupted
			if !user && suspended {
				rs.notify(id) // notify.go
			}
			rs.ended(id) // mount.go
		}
	})
}

// logf reports what happened to a run beyond its state.
// Every line is redacted whole: a caller that forgot to redact an error
// leaks no key through the server's log.
func (rs *Runs) logf(format string, args ...any) {
	io.WriteString(rs.o.Stderr, rs.redact(fmt.Sprintf("ensemble serve: "+format+"\n", args...)))
}

// logWriter writes to the server's log, redacted: what net/http logs (a
// panic's value, an accept error) goes through it (Server.Serve).
type logWriter struct{ rs *Runs }

func (w logWriter) Write(p []byte) (int, error) {
	if _, err := w.rs.o.Stderr.Write(w.rs.redactBytes(p)); err != nil {
		return 0, err
	}
	return len(p), nil
}
