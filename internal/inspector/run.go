package inspector

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync"

	"github.com/ensemble-run/ensemble/durable"
	"github.com/ensemble-run/ensemble/ensemble"
	"github.com/ensemble-run/ensemble/kinds/ask"
	"github.com/ensemble-run/ensemble/session"
	"github.com/ensemble-run/ensemble/state"
	"github.com/ensemble-run/ensemble/store"
)

// job is a run this server goes on with in the background.
type job struct {
	mu   sync.Mutex
	done bool
	err  error
}

// status is "running", "" once the run ended (its state says how), or the
// error that stopped it.
func (j *job) status() string {
	j.mu.Lock()
	defer j.mu.Unlock()
	switch {
	case !j.done:
		return StatusRunning
	case j.err != nil:
		return "error: " + j.err.Error()
	}
	return ""
}

// resume continues run id of the database at path, database i of the
// server, in the background, as `resume` does: with its ensemble file as it
// loads now (session.Load), its saved files and limits, and the answers
// given (checked against what it waits for). What stops it from starting
// (an ensemble file that changed, an answer for an agent that does not
// wait, a run another process holds) is returned; what happens after is
// in its state. turns, when given, is the run's turn count the answers
// were given for: a run that has gone on since (it asks again, say, after
// another answer to the same question) is refused, so that an answer sent
// twice answers once.
func (s *Server) resume(i int, path, id string, given map[string]string, turns *int) error {
	if s.opts.GoOn != nil {
		turn := 0
		if turns != nil {
			turn = *turns
		}
		return s.opts.GoOn.Answer(id, given, turn)
	}
	saved, err := durable.Open(path, id, s.sync)
	if err != nil {
		if errors.Is(err, store.ErrLocked) {
			return &httpError{http.StatusConflict, err.Error()}
		}
		return err
	}
	if n := saved.File.State.TurnCount; turns != nil && *turns != n {
		saved.Close()
		return &httpError{http.StatusConflict, fmt.Sprintf("run %s has gone on since these answers were given (at turn %d, it is at turn %d now): they answer questions it no longer waits for; read what it waits for now", id, *turns, n)}
	}
	_, err = s.goOn(i, saved, given, false)
	return err
}

// goOn starts saved's run (Open, or OpenFork: fork) in the background and
// returns its id (a fork's is new). saved is closed when the run ends, or
// at once when it does not start.
func (s *Server) goOn(i int, saved *durable.Saved, given map[string]string, fork bool) (string, error) {
	r, sess, err := s.prepare(saved, saved.File, given, fork)
	if err != nil {
		saved.Close()
		return "", err
	}
	id, path := saved.Info.ID, saved.Path // a fork's own, once it started
	j := &job{}
	s.mu.Lock()
	s.jobs[key(i, id)] = j
	s.mu.Unlock()
	s.runs.Add(1)
	go func() {
		defer s.runs.Done()
		_, err := r.Run(s.ctx)
		sess.Close()
		saved.Close()
		if err != nil {
			fmt.Fprintf(s.opts.Stderr, "ensemble ui: run %s of %s: %s\n", id, path, s.redacted(err.Error()))
		}
		j.mu.Lock()
		j.done, j.err = true, err
		j.mu.Unlock()
	}()
	return id, nil
}

// prepare opens the session of saved's run and the run that continues it
// (durable.Prepare and Start, as resume does), with no terminal: an ask
// agent suspends the run again.
func (s *Server) prepare(saved *durable.Saved, sf *state.File, given map[string]string, fork bool) (*session.Run, *session.Session, error) {
	if !sf.Resumable() && !fork {
		return nil, nil, &httpError{http.StatusConflict, fmt.Sprintf("run %s has ended (%s): nothing to resume; fork it from a turn instead", saved.Info.ID, sf.CompletionReason)}
	}
	p, err := durable.Prepare(saved, durable.ResumeOptions{
		Answers:   given,
		Force:     fork, // a fork goes on with the ensemble file as it is
		LookupEnv: s.opts.LookupEnv,
		Loaded: func(e *ensemble.Ensemble) {
			s.mu.Lock()
			s.addSecrets(e)
			s.mu.Unlock()
		},
	})
	var changed *durable.ChangedFilesError
	var answer *durable.AnswerError
	switch {
	case errors.Is(err, durable.ErrBudgetSpent), errors.As(err, &changed):
		return nil, nil, &httpError{http.StatusConflict, durable.WithHint(err)}
	case errors.As(err, &answer):
		return nil, nil, &httpError{http.StatusBadRequest, err.Error()}
	case err != nil:
		return nil, nil, &httpError{http.StatusConflict, err.Error()}
	}
	sess, r, err := p.Start(s.ctx, session.Options{LookupEnv: s.opts.LookupEnv, Ask: ask.Options{Out: io.Discard, NoInput: true, Suspend: true}}, session.RunOptions{})
	if _, ok := errors.AsType[*durable.OpenError](err); ok {
		return nil, nil, &httpError{http.StatusConflict, err.Error()}
	}
	if err != nil {
		return nil, nil, err
	}
	return r, sess, nil
}

// fork makes a new run of the database at path whose first turn turns are
// those of run id, and goes on with it in the background. Nothing is
// written when it cannot start (durable.OpenFork): a refused fork leaves
// no run behind.
func (s *Server) fork(i int, path, id string, turn int) (string, error) {
	if s.opts.GoOn != nil {
		return s.opts.GoOn.Fork(id, turn)
	}
	saved, err := durable.OpenFork(path, id, turn, s.sync)
	if err != nil {
		return "", err
	}
	return s.goOn(i, saved, nil, true)
}
