package store

import (
	"fmt"
	"sync"
)

// behindRows is how many turns a writer in the background may hold queued
// before SaveTurn waits for it, while as many may be being written: a run
// of instant turns is at most twice as many turns, 64, ahead of its
// database.
const behindRows = 32

// behind writes a run's turn rows on a goroutine of its own, in order,
// while the run goes on (Writer.Background). The first write that fails
// stops it: no later turn is written after a turn that is missing, and
// every later call reports that error.
//
// The goroutine takes all the rows queued at once, and writes them in one
// transaction: a turn alone when the run waits for its database (a turn
// that takes longer than a commit, as every turn that runs a script or
// asks a model does), the turns that came in the meantime together when
// the run is faster than the commits (instant turns, such as injected
// responses), as a database's group commit does. Each turn is its own row
// either way, and a transaction holds whole turns only: a kill leaves the
// run at the end of a turn. A run that filled the queue waits for it to be
// taken whole: a run of instant turns and its writer wake each other once
// in behindRows turns, not at every turn.
type behind struct {
	mu       sync.Mutex
	queued   []turnRow // rows to write, in order
	sleeping bool      // the goroutine waits for rows
	full     bool      // the run waits for room
	closed   bool
	wake     sync.Cond // the goroutine's: rows were queued, or closed
	room     sync.Cond // the run's: the queue was taken
	written  sync.Cond // Wait's: a row was written
	waiters  int
	handed   int // rows queued, ever
	done     int // rows written (or dropped after a failure)
	err      error
	finished chan struct{}
}

type turnRow [turnColumns]any

// Background has the turns that SaveTurn is given written by a goroutine
// of the writer's while the run goes on: SaveTurn encodes the turn's row
// (it reads the state, which the next turn changes) and returns; the row
// is committed behind it, in order, at most behindRows turns behind (see
// behind for the transactions). Wait waits for the rows queued; Finish
// and Close write what is left. The database is the writer's until then:
// no other call may use it. Only one writer of a database writes in the
// background (they would share its connection): Background does nothing
// for another, nor on a database whose runs commit together (GroupCommit).
//
// A run that goes on ahead of its database must not do what cannot be
// done twice before the turns it starts from are saved (a kill would play
// them again): its runners call Wait first, and after a turn that had
// such an execution (barrier.Barrier).
func (w *Writer) Background() {
	if w.db.behind != nil || w.db.group != nil {
		return
	}
	b := &behind{finished: make(chan struct{})}
	b.wake.L, b.room.L, b.written.L = &b.mu, &b.mu, &b.mu
	w.bg.Store(b)
	w.db.behind = w
	go w.writeBehind(b)
}

func (w *Writer) writeBehind(b *behind) {
	defer close(b.finished)
	var batch []turnRow
	for {
		b.mu.Lock()
		for len(b.queued) == 0 && !b.closed {
			b.sleeping = true
			b.wake.Wait()
		}
		b.sleeping = false
		if len(b.queued) == 0 {
			b.mu.Unlock()
			return // closed
		}
		batch, b.queued = b.queued, batch[:0] // the batch written last, cleared, takes the next rows
		if b.full {
			b.full = false
			b.room.Signal()
		}
		failed := b.err != nil
		b.mu.Unlock()
		var err error
		if !failed {
			err = w.writeRows(batch)
		}
		if err != nil {
			err = &Error{Path: w.db.path, Err: fmt.Errorf("saving turn %d: %w", batch[0][1], explain(err))}
		}
		clear(batch) // the rows' strings go with them
		b.mu.Lock()
		b.done += len(batch)
		if err != nil {
			b.err = err
			if b.full { // the run waits for room it will not need
				b.full = false
				b.room.Signal()
			}
		}
		if b.waiters > 0 {
			b.written.Broadcast()
		}
		b.mu.Unlock()
	}
}

// writeRows writes the turns of rows, in order: a turn alone in its own
// transaction, several (turns that came faster than they could be written
// one by one) in one.
func (w *Writer) writeRows(rows []turnRow) error {
	insert := w.insertTurn
	if len(rows) == 1 {
		_, err := insert.ExecContext(w.db.ctx, rows[0][:]...)
		if err == nil {
			w.db.committed(1)
		}
		return err
	}
	err := w.db.tx2(w.begin, w.commit, func() error {
		for i := range rows {
			if _, err := insert.ExecContext(w.db.ctx, rows[i][:]...); err != nil {
				return err
			}
		}
		return nil
	})
	if err == nil {
		w.db.committed(len(rows))
	}
	return err
}

// queue hands row to the goroutine, waiting while it holds behindRows,
// unless a write failed (before or while it waited): then it returns that
// error, and the row is not written.
func (b *behind) queue(row *turnRow) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	for len(b.queued) >= behindRows && b.err == nil {
		b.full = true
		b.room.Wait()
	}
	if b.err != nil {
		return b.err
	}
	if b.queued == nil {
		b.queued = make([]turnRow, 0, behindRows)
	}
	b.queued = append(b.queued, *row)
	b.handed++
	if b.sleeping {
		b.sleeping = false
		b.wake.Signal()
	}
	return nil
}

// failed is the error of the first write that failed, if any.
func (b *behind) failed() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.err
}

// wait waits until every row queued is written, or a write failed.
func (b *behind) wait() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.waiters++
	for b.done < b.handed && b.err == nil {
		b.written.Wait()
	}
	b.waiters--
	return b.err
}

// stopBehind writes the rows queued and ends the goroutine: the writer
// writes on the caller's goroutine again. It returns the error that
// stopped the writes, if any.
func (w *Writer) stopBehind() error {
	b := w.bg.Load()
	if b == nil {
		return nil
	}
	b.mu.Lock()
	b.closed = true
	b.wake.Signal()
	b.mu.Unlock()
	<-b.finished
	w.bg.Store(nil)
	w.db.behind = nil
	return b.failed()
}

// Wait waits until every turn given to SaveTurn is in the database (when
// the writer writes in the background; at once otherwise) and returns the
// error that stopped the writes, if any. It may be called from any
// goroutine.
func (w *Writer) Wait() error {
	if b := w.bg.Load(); b != nil {
		return b.wait()
	}
	return nil
}
