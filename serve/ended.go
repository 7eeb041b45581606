package serve

import (
	"bytes"
	"context"
	"encoding/json"
	"time"

	"github.com/ensemble-run/ensemble/engine"
)

// WaitResult is Wait, and the run's result when it ended or suspended (nil
// while it goes on): the object Result writes, compact. A new run that ended in
// this server answers with the result its run returned, the one `ensemble
// run --output json` prints, without reading it back from the database;
// any other run (answered, forked, cancelled, gone on after a restart) is
// read back as Result reads it.
func (rs *Runs) WaitResult(ctx context.Context, id string, d time.Duration) (status string, result []byte, err error) {
	a := rs.await(ctx, id, d)
	if res := endedHere(a); res != nil {
		rs.mu.Lock()
		user := a.user
		rs.mu.Unlock()
		if st := rs.status(id, res.CompletionReason); !user && st != StatusQueued && st != StatusRunning {
			b := a.written
			if b == nil {
				var err error
				if b, err = compactJSON(res); err != nil {
					return "", nil, err
				}
			}
			return st, rs.redactBytes(b), nil
		}
	}
	if status, err = rs.Wait(ctx, id, 0); err != nil || status == StatusQueued || status == StatusRunning {
		if err == nil {
			err = rs.commit() // a run started Waited is saved before it is answered for
		}
		return status, nil, err
	}
	result, _, err = rs.Result(id)
	if err == nil {
		var buf bytes.Buffer
		err = json.Compact(&buf, result) // as the other answer
		result = buf.Bytes()
	}
	return status, result, err
}

// endedHere is the result of a's run once it has ended, when it keeps one
// (active.res), or nil.
func endedHere(a *active) *engine.Result {
	if a == nil {
		return nil
	}
	select {
	case <-a.done:
		return a.res
	default:
		return nil
	}
}

// commit waits until what the new runs wrote is committed
// (store.DB.GroupCommit): by the group's next commit, shared with the
// others who wait.
func (rs *Runs) commit() error {
	rs.wdb.Hold()
	defer rs.wdb.Release()
	return rs.wdb.Synced()
}
