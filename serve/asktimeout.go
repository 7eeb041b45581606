package serve

import (
	"context"
	"errors"
	"strings"
	"sync"
	"time"

	"github.com/ensemble-run/ensemble/engine"
	"github.com/ensemble-run/ensemble/store"
)

// Questions that time out (docs/serve.md#questions-that-time-out): a run
// that waits for an ask agent with timeout: has the question's deadline
// saved with it (engine.Deadlines). The server sweeps its state database
// when it starts and every Options.TimeoutPoll: each run that waits for
// an answer whose deadline has passed (by Options.Clock) goes on as an
// answered run does (goOn), without an answer, and the agent's execution
// applies its on_timeout. The first answer wins: a run answered before
// the sweep waits for nothing; one being answered is claimed (claim, the
// run's lock); and a deadline stands only until its agent runs, so it is
// applied once, across restarts and servers on one database.

// deadlineSeen is what the sweeper knows of a run that waits: its earliest
// standing deadline (zero: none), as of the save it read.
type deadlineSeen struct {
	saved    time.Time
	earliest time.Time
	logged   bool // going on failed (a file that changed, a full queue), and the log says so
}

// timeouts is the sweeper's memory of the runs it read.
type timeouts struct {
	mu   sync.Mutex
	seen map[string]deadlineSeen
}

// sweepTimeouts goes on with every run waiting for an answer whose
// question's deadline is not after now.
func (rs *Runs) sweepTimeouts(now time.Time) {
	runs, err := rs.runs()
	if err != nil {
		rs.logf("listing the runs whose questions may have timed out: %s", err)
		return
	}
	rs.to.mu.Lock()
	defer rs.to.mu.Unlock()
	if rs.to.seen == nil {
		rs.to.seen = map[string]deadlineSeen{}
	}
	waiting := map[string]bool{}
	for _, r := range runs {
		if r.CompletionReason != engine.AwaitingInput {
			continue
		}
		waiting[r.ID] = true
		d, ok := rs.to.seen[r.ID]
		if !ok || !d.saved.Equal(r.Saved) {
			d = deadlineSeen{saved: r.Saved}
			rs.rd.Hold()
			sf, err := rs.rd.Load(r)
			rs.rd.Release()
			if err != nil {
				continue
			}
			for _, dl := range engine.Deadlines(sf) {
				if d.earliest.IsZero() || dl.At.Before(d.earliest) {
					d.earliest = dl.At
				}
			}
			rs.to.seen[r.ID] = d
		}
		if d.earliest.IsZero() || now.Before(d.earliest) {
			continue
		}
		if err := rs.timeOut(r.ID, now); err != nil && !d.logged { // tried again at the next sweep
			rs.logf("run %s: its question timed out, but it does not go on: %s", r.ID, rs.redact(err.Error()))
			d.logged = true
			rs.to.seen[r.ID] = d
		}
	}
	for id := range rs.to.seen {
		if !waiting[id] {
			delete(rs.to.seen, id)
		}
	}
}

// timeOut goes on with run id, whose question's deadline has passed at
// now, unless it was answered (or cancelled) first, or is being answered
// (here or by another process): then it does nothing.
func (rs *Runs) timeOut(id string, now time.Time) error {
	release, err := rs.claim(id, "answered")
	if err != nil {
		return nil // going on here, being answered, or the server is closing
	}
	defer release()
	if m := rs.j.meta(id); m != nil && m.Cancelled {
		return nil
	}
	saved, err := rs.open(id)
	if errors.Is(err, store.ErrLocked) || err != nil && strings.Contains(err.Error(), store.ErrLocked.Error()) {
		return nil // another process goes on with it
	}
	if err != nil {
		return err
	}
	passed := engine.Passed(saved.File, now)
	if len(passed) == 0 { // answered, or gone on, since the sweep read it
		saved.Close()
		return nil
	}
	rs.logf("run %s: no answer for %s by the deadline: on_timeout applies", id, strings.Join(passed, ", "))
	return rs.goOn(saved, nil, false, nil)
}

// startTimeouts sweeps now, then every TimeoutPoll until ctx is done; it
// returns a function that stops the sweeps and waits.
func (s *Server) startTimeouts(ctx context.Context) (stop func()) {
	s.runs.sweepTimeouts(s.o.Clock())
	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Go(func() {
		t := time.NewTicker(s.o.TimeoutPoll)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				s.runs.sweepTimeouts(s.o.Clock())
			}
		}
	})
	return func() { cancel(); wg.Wait() }
}
