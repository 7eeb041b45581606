package batch

import (
	"context"
	"strconv"

	"github.com/ensemble-run/ensemble/durable"
	"github.com/ensemble-run/ensemble/engine"
	"github.com/ensemble-run/ensemble/session"
	"github.com/ensemble-run/ensemble/store"
)

// Local is the RunOne of the runs of a batch in this process: a run of sess
// per input, each with injected responses of its own (every run starts at
// the first response), sharing the session's runners and MCP servers. With
// a Store, each run is saved as run BATCH.N of its database (N: the input's
// position, from 1), after every turn.
func Local(sess *session.Session, st *Store) RunOne {
	if st == nil {
		return func(ctx context.Context, in *Input) (*engine.Result, error) {
			r, err := sess.Start(in.Input, session.RunOptions{})
			if err != nil {
				return nil, err
			}
			return r.Run(ctx)
		}
	}
	return func(ctx context.Context, in *Input) (*engine.Result, error) {
		return st.runDurable(ctx, sess, in)
	}
}

// runID is the id of the run of input in in the state database: the
// batch's id and the input's position, from 1.
func (st *Store) runID(in *Input) string {
	return st.info.ID + "." + strconv.Itoa(in.Index+1)
}

// runDurable runs input in as run BATCH.N of the database: a new run, or
// the one a resumed batch finds unfinished, continued from its last
// completed turn.
func (st *Store) runDurable(ctx context.Context, sess *session.Session, in *Input) (*engine.Result, error) {
	id := st.runID(in)
	st.db.Hold()
	info := st.runs[id]
	st.db.Release()
	var (
		r   *session.Run
		err error
	)
	switch {
	case info == nil:
		refs, derr := st.resolved()
		if derr != nil {
			return nil, derr
		}
		d, derr := durable.CreateIn(st.db, id, refs)
		if derr != nil {
			return nil, derr
		}
		r, err = sess.Start(in.Input, session.RunOptions{Save: d, RunID: id})
	case info.CompletionReason == "" || info.CompletionReason == engine.Cancelled:
		r, err = st.continueRun(sess, info)
	default:
		// It ended, but the process was stopped before its line was saved.
		st.db.Hold()
		sf, err := st.db.Load(info)
		st.db.Release()
		if err != nil {
			return nil, err
		}
		res := durable.Result(sf, info)
		res.SetOutput(sess.Ensemble()) // as the run's own line would have it
		return res, nil
	}
	if err != nil {
		return nil, err
	}
	return r.Run(ctx)
}

// continueRun prepares the run info of a resumed batch, which stopped
// before it ended, to go on from its last completed turn.
func (st *Store) continueRun(sess *session.Session, info *store.RunInfo) (*session.Run, error) {
	refs, err := st.resolved()
	if err != nil {
		return nil, err
	}
	d, sf, err := durable.ContinueIn(st.db, info, refs)
	if err != nil {
		return nil, err
	}
	return sess.Resume(sf, session.RunOptions{Save: d, RunID: info.ID})
}
