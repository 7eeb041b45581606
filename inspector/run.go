package inspector

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync"

	"github.com/ensemble-run/ensemble/answers"
	"github.com/ensemble-run/ensemble/durable"
	"github.com/ensemble-run/ensemble/engine"
	"github.com/ensemble-run/ensemble/ensemble"
	"github.com/ensemble-run/ensemble/runners"
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
// in its state. fork: the run is a new fork, which goes on with the
// ensemble file as it is (a changed file is no reason to refuse).
func (s *Server) resume(i int, path, id string, given map[string]string, fork bool) error {
	saved, err := durable.Open(path, id, s.sync)
	if err != nil {
		if errors.Is(err, store.ErrLocked) {
			return &httpError{http.StatusConflict, err.Error()}
		}
		return err
	}
	sf := saved.File
	r, sess, err := s.prepare(saved, sf, given, fork)
	if err != nil {
		saved.Close()
		return err
	}
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
			fmt.Fprintf(s.opts.Stderr, "ensemble ui: run %s of %s: %v\n", id, path, err)
		}
		j.mu.Lock()
		j.done, j.err = true, err
		j.mu.Unlock()
	}()
	return nil
}

// prepare opens the session of saved's run and the run that continues it.
func (s *Server) prepare(saved *durable.Saved, sf *state.File, given map[string]string, fork bool) (*session.Run, *session.Session, error) {
	if !sf.Resumable() && !fork {
		return nil, nil, &httpError{http.StatusConflict, fmt.Sprintf("run %s has ended (%s): nothing to resume; fork it from a turn instead", saved.Info.ID, sf.CompletionReason)}
	}
	if sf.CompletionReason == engine.BudgetExceeded {
		return nil, nil, &httpError{http.StatusConflict, "the run stopped because a budget was spent: resume it with a higher cap (resume --max-cost, --max-tokens or --max-requests)"}
	}
	e, err := session.Load(sf.Ensemble.Path, nil, session.LoadOptions{Profiles: sf.Profiles, LookupEnv: s.opts.LookupEnv})
	if err != nil {
		return nil, nil, &httpError{http.StatusConflict, saved.LoadError(err).Error()}
	}
	s.mu.Lock()
	s.addSecrets(e)
	s.mu.Unlock()
	responses := ""
	if sf.Responses != nil {
		responses = sf.Responses.Path
	}
	errs, err := saved.Check(e, responses)
	if err != nil {
		return nil, nil, &httpError{http.StatusConflict, err.Error()}
	}
	if len(errs) > 0 && !fork {
		return nil, nil, &httpError{http.StatusConflict, errors.Join(errs...).Error() +
			"\nresuming would continue the run with a different workflow: resume --force does it on the command line"}
	}
	if err := answers.Check(e, sf, given); err != nil {
		return nil, nil, &httpError{http.StatusBadRequest, err.Error()}
	}
	opts, err := s.sessionOptions(e, sf)
	if err != nil {
		return nil, nil, &httpError{http.StatusConflict, err.Error()}
	}
	save, err := saved.Continue(durable.SavedRefs(sf))
	if err != nil {
		return nil, nil, err
	}
	sess, err := session.Open(s.ctx, e, opts)
	if err != nil {
		save.Abandon()
		return nil, nil, &httpError{http.StatusConflict, err.Error()}
	}
	r, err := sess.Resume(sf, session.RunOptions{Save: save, RunID: saved.Info.ID, Answers: given})
	if err != nil {
		sess.Close()
		save.Abandon()
		return nil, nil, err
	}
	return r, sess, nil
}

// sessionOptions are the options of a run that goes on in the background:
// no terminal (an ask agent suspends the run again), the run's saved
// limits, injected responses and recording.
func (s *Server) sessionOptions(e *ensemble.Ensemble, sf *state.File) (session.Options, error) {
	o := sf.Options
	opts := session.Options{
		LookupEnv: s.opts.LookupEnv,
		Out:       io.Discard,
		NoInput:   true,
		Suspend:   true,
		MaxTurns:  o.MaxTurns,
		Timeout:   o.Timeout(),
		Parallel:  o.Parallel,
	}
	if b := (&ensemble.Budget{MaxTokens: o.MaxTokens, MaxRequests: o.MaxRequests, MaxCost: o.MaxCost}); !b.Empty() {
		opts.Budget = b
	}
	if sf.Responses != nil {
		resp, err := runners.LoadResponsesFor(sf.Responses.Path, e)
		if err != nil {
			return opts, err
		}
		opts.Responses, opts.ResponsesFile = resp, sf.Responses.Path
	}
	rec, err := session.SavedRecording(o.Recording).Open()
	if err != nil {
		return opts, err
	}
	opts.Recording = rec
	return opts, nil
}

// fork makes a new run of the database at path whose first turn turns are
// those of run id, and goes on with it in the background.
func (s *Server) fork(i int, path, id string, turn int) (string, error) {
	newID, err := forkRun(path, id, turn, s.sync)
	if err != nil {
		return "", err
	}
	if err := s.resume(i, path, newID, nil, true); err != nil {
		return newID, err
	}
	return newID, nil
}
