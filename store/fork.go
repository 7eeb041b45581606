package store

import (
	"errors"
	"fmt"
	"time"
)

// ForkError is a turn a run cannot be forked from: before its first saved
// state, or after its last committed turn.
type ForkError struct {
	Run         string
	Turn        int
	Base, Turns int // the run's first saved state (the turn it starts at) and its last committed turn
}

func (e *ForkError) Error() string {
	turns := fmt.Sprintf("%d turns", e.Turns)
	if e.Turns == 1 {
		turns = "1 turn"
	}
	from := fmt.Sprintf("0 (its start) to %d", e.Turns)
	if e.Base > 0 {
		from = fmt.Sprintf("%d (its first saved state) to %d", e.Base, e.Turns)
	}
	return fmt.Sprintf("run %s cannot be forked from turn %d: it has %s; fork from a turn from %s", e.Run, e.Turn, turns, from)
}

// checkFork refuses to fork r from turn: the turns a fork copies must be
// committed, and after the run's first saved state, and r must still be
// the run of its row (not replaced since it was read by a run of the same
// id, which takes the row: run --run-id over a finished run).
func (db *DB) checkFork(r *RunInfo, turn int) error {
	rows, err := db.query(`SELECT base, coalesce((SELECT turn FROM turns WHERE `+turnsOf("seq")+` ORDER BY key DESC LIMIT 1), base), started_at FROM runs WHERE seq = ?`, r.seq)
	if err != nil {
		return &Error{Path: db.path, Err: err}
	}
	if len(rows) == 0 {
		return &Error{Path: db.path, Err: fmt.Errorf("run %s: %w: it was removed", r.ID, ErrNoRun)}
	}
	// By the time, as RunInfo reads it, whatever the text's digits.
	if started, _ := time.Parse(time.RFC3339Nano, str(rows[0][2])); !started.Equal(r.Started) {
		return &Error{Path: db.path, Err: fmt.Errorf("run %s was replaced by a new run of the same id (started %s) since it was read: fork that one, or another", r.ID, started.Format(time.RFC3339))}
	}
	base, last := int(rows[0][0].(int64)), int(rows[0][1].(int64))
	if turn < base || turn > last {
		return &Error{Path: db.path, Err: &ForkError{Run: r.ID, Turn: turn, Base: base, Turns: last}}
	}
	return nil
}

// Fork adds a run id whose first turns are those of run from up to its
// turn `turn`, copied: its first saved state (snapshot), its rows of turns
// 1 to turn as they are, and its warnings of those turns. The new run
// records from and turn as its parent, has not finished (it goes on as a
// resumed run does: DB.Lock, then DB.Continue), and is not locked. Run
// from is not changed, nor locked: a process writing it meanwhile changes
// none of the turns copied, which are committed (a turn after its last
// committed one is refused, as is one before its first saved state; turn
// 0 of a run that starts at 0 is its input). The copy is matched by turn,
// never by position: the rows of a turn hold each agent's executions and
// outputs as counts, which the new run goes on from (an agent's next
// execution is its next injected response).
func (db *DB) Fork(from *RunInfo, turn int, id string) (*RunInfo, error) {
	if err := CheckID(id); err != nil {
		return nil, &Error{Path: db.path, Err: err}
	}
	now := time.Now().UTC().Format(timeFormat)
	var seq int64
	err := db.tx(func() error {
		if err := db.checkFork(from, turn); err != nil {
			return err
		}
		if rows, err := db.query(`SELECT 1 FROM runs WHERE id = ?`, id); err != nil {
			return err
		} else if len(rows) > 0 {
			return fmt.Errorf("it holds a run %s already", id)
		}
		if err := db.exec(`INSERT INTO runs (id, ensemble, responses, profiles, options, started_at, saved_at, completion_reason, base, snapshot, parent, parent_turn)
			SELECT ?1, ensemble, responses, profiles, options, ?2, ?2, '', base, snapshot, id, ?3 FROM runs WHERE seq = ?4`,
			id, now, int64(turn), from.seq); err != nil {
			return err
		}
		rows, err := db.query(`SELECT seq FROM runs WHERE id = ?`, id)
		if err != nil {
			return err
		}
		seq = rows[0][0].(int64)
		if err := db.exec(`INSERT INTO turns (key, run, turn, records, counts, context, edges, memory, pending, saved_at)
			SELECT (?1 << 32) | turn, ?1, turn, records, counts, context, edges, memory, pending, saved_at FROM turns
			WHERE key BETWEEN ?2 << 32 AND (?2 << 32) + ?3 ORDER BY key`, seq, from.seq, int64(turn)); err != nil {
			return err
		}
		// The warnings of the turns copied, numbered again from 0 (a
		// warning is numbered by its place in the run's list).
		return db.exec(`INSERT INTO warnings (run, idx, warning)
			SELECT ?1, row_number() OVER (ORDER BY idx) - 1, warning FROM warnings
			WHERE run = ?2 AND json_extract(warning, '$.turn_number') <= ?3 ORDER BY idx`, seq, from.seq, int64(turn))
	})
	if err != nil {
		var e *Error
		if errors.As(err, &e) {
			return nil, err
		}
		return nil, &Error{Path: db.path, Err: fmt.Errorf("forking run %s from turn %d: %w", from.ID, turn, err)}
	}
	return db.Run(id)
}
