package serve

// Going on with a saved run: an answer, a cancel, a fork.

import (
	"errors"
	"sync"

	"github.com/ensemble-run/ensemble/durable"
	"github.com/ensemble-run/ensemble/engine"
	"github.com/ensemble-run/ensemble/events"
	"github.com/ensemble-run/ensemble/session"
	"github.com/ensemble-run/ensemble/store"
)

// Answer gives answers (by agent: text, or JSON text) to run id, which
// must wait for each of them: the checks of `resume --answer`. turn, when > 0, is the turn
// count the answers were given at: a run that has gone on since refuses
// them (stale). The run goes on in the background.
func (rs *Runs) Answer(id string, given map[string]string, turn int) error {
	if turn <= 0 {
		turn = anyTurn
	}
	return rs.answerAt(id, given, turn)
}

// anyTurn is the turn of answers that are taken whatever the run's turn
// count: 0 is a turn count (a run whose first agent asks waits at it).
const anyTurn = -1

// answerAt is Answer with turn the turn count the answers were given at,
// 0 included, or anyTurn.
func (rs *Runs) answerAt(id string, given map[string]string, turn int) error {
	if len(given) == 0 {
		return errorf(CodeBadRequest, "no answer: post {\"AGENT\": ANSWER}")
	}
	// The id comes from a URL: a run of the database, before it names a
	// file of the journal (meta) or takes a place in its cache.
	if _, err := rs.info(id); err != nil {
		return err
	}
	release, err := rs.claim(id, "answered")
	if err != nil {
		return err
	}
	defer release()
	if m := rs.j.meta(id); m != nil && m.Cancelled {
		return errorf(CodeConflict, "run %s was cancelled: it takes no answer", id)
	}
	saved, err := rs.open(id)
	if err != nil {
		return err
	}
	sf := saved.File
	switch {
	case sf.CompletionReason != engine.AwaitingInput:
		saved.Close()
		return errorf(CodeConflict, "run %s waits for no answer (%s)", id, durable.Status(sf.CompletionReason))
	case turn != anyTurn && turn != sf.State.TurnCount:
		saved.Close()
		return errorf(CodeConflict, "run %s has gone on since these answers were given (at turn %d, it is at turn %d now): they answer questions it no longer waits for", id, turn, sf.State.TurnCount)
	}
	if rs.o.Engine != nil {
		return rs.goOnRemote(saved, given) // engine.go
	}
	return rs.goOn(saved, given, false, nil)
}

// open locks run id of the state database to go on with it.
func (rs *Runs) open(id string) (*durable.Saved, error) {
	if !runIDPattern.MatchString(id) {
		return nil, errorf(CodeNotFound, "no run %q", id)
	}
	saved, err := durable.Open(rs.o.State, id, rs.sync)
	switch {
	case errors.Is(err, durable.ErrPick):
		return nil, errorf(CodeNotFound, "no run %q", id)
	case errors.Is(err, store.ErrLocked):
		return nil, errorf(CodeConflict, "run %s: %s", id, rs.redact(err.Error()))
	}
	return saved, err
}

// goOn goes on with saved (a run, or a fork: durable.OpenFork) in the
// background with the answers given, as resume does (durable.Prepare and
// Start); saved is closed when it ends, or at once when it cannot start.
// started, when set, is told the id once it is known (a fork's is new).
func (rs *Runs) goOn(saved *durable.Saved, given map[string]string, fork bool, started func(id string) error) error {
	p, err := durable.Prepare(saved, durable.ResumeOptions{Answers: given, Force: fork, LookupEnv: rs.o.LookupEnv})
	var answer *durable.AnswerError
	switch {
	case errors.As(err, &answer):
		saved.Close()
		return errorf(CodeConflict, "%s", rs.redact(err.Error()))
	case err != nil: // a spent budget, changed files: with the hint
		saved.Close()
		return errorf(CodeConflict, "%s", rs.redact(durable.WithHint(err)))
	}
	if err := rs.reserve(); err != nil {
		saved.Close()
		return err
	}
	var id string
	// The events sink needs the run's id, which a fork has only once it
	// started: events go to it through this indirection.
	var sink events.Sink
	var sinkMu sync.Mutex
	// Now: a question whose deadline passed by the server's clock applies
	// its on_timeout (asktimeout.go).
	ro := session.RunOptions{Now: rs.o.Clock(), Events: func(ev events.Event) {
		sinkMu.Lock()
		s := sink
		sinkMu.Unlock()
		if s != nil {
			s(ev)
		}
	}}
	o, _ := rs.sessionOptions(nil) // the saved run's responses: Prepare's
	_, o.Models.Stream = rs.streamNext.Load(saved.Info.ID)
	sess, r, err := p.Start(rs.ctx, o, ro)
	if err != nil {
		rs.unreserve()
		saved.Close()
		return errorf(CodeConflict, "%s", rs.redact(err.Error()))
	}
	id = saved.Info.ID
	sinkMu.Lock()
	sink = rs.sink(id)
	sinkMu.Unlock()
	if started != nil {
		if err := started(id); err != nil {
			r.Abandon()
			sess.Close()
			rs.unreserve()
			saved.Close()
			return err
		}
	}
	rs.launch(id, sess, r, saved.Close)
	return nil
}

// Cancel cancels run id: a run going on stops (saved as cancelled), a
// suspended one takes no answer any more. A run that has ended is a
// conflict.
func (rs *Runs) Cancel(id string) error {
	info, err := rs.info(id)
	if err != nil {
		return err
	}
	rs.mu.Lock()
	if a := rs.active[id]; a != nil {
		a.user = true
		a.cancel()
		rs.mu.Unlock()
		return rs.markCancelled(id, info)
	}
	rs.mu.Unlock()
	release, err := rs.claim(id, "cancelled")
	if err != nil {
		return err
	}
	defer release()
	if !info.Resumable() {
		return errorf(CodeConflict, "run %s has ended (%s): nothing to cancel", id, info.CompletionReason)
	}
	if m := rs.j.meta(id); m != nil && m.Cancelled {
		return nil
	}
	if err := rs.markCancelled(id, info); err != nil {
		return err
	}
	rs.cancelRemote(id) // engine.go
	rs.hook(id, true)
	return nil
}

func (rs *Runs) markCancelled(id string, info *store.RunInfo) error {
	return rs.j.updateMeta(id, info.Ensemble, func(m *meta) { m.Cancelled = true })
}

// Fork starts a new run whose first turns are those of run id up to turn
// (0: its input alone), and goes on with it in the background; it
// returns the new run's id. The run forked is untouched.
func (rs *Runs) Fork(id string, turn int) (string, error) {
	info, err := rs.info(id)
	if err != nil {
		return "", err
	}
	if turn < 0 {
		return "", errorf(CodeBadRequest, "from_turn must be 0 or more, got %d", turn)
	}
	if rs.o.Engine != nil {
		return "", rs.errNoFork() // engine.go
	}
	saved, err := durable.OpenFork(rs.o.State, id, turn, rs.sync)
	if err != nil {
		return "", errorf(CodeConflict, "%s", rs.redact(err.Error()))
	}
	m := rs.j.meta(id)
	fork := ""
	err = rs.goOn(saved, nil, true, func(fid string) error {
		fork = fid
		nm := &meta{Ensemble: info.Ensemble, Parent: id}
		if m != nil {
			nm.Webhook = m.Webhook
		}
		return rs.j.setMeta(fid, nm)
	})
	return fork, err
}
