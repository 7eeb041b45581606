package store

import (
	"errors"
	"fmt"
	"time"
)

// A batch (`ensemble batch --state`, docs/cli.md#ensemble-batch) is a set
// of runs of one ensemble, one per input, kept in the database beside the
// runs: its spec (what the command needs to go on: the files, the flags,
// the output; JSON the caller defines) and, for each input whose run has
// ended, the line it printed, so that a resumed batch prints exactly those
// lines again. Its runs are ordinary runs, with ids of the caller's choice.
//
// The tables are made the first time a batch is added, so databases
// without batches are as they were.
const batchSchema = `
CREATE TABLE IF NOT EXISTS batches (
	seq        INTEGER PRIMARY KEY, -- also the offset of the batch's lock
	id         TEXT NOT NULL UNIQUE,
	spec       TEXT NOT NULL,       -- JSON, the caller's
	started_at TEXT NOT NULL,
	status     TEXT NOT NULL DEFAULT '' -- '' while unfinished
);
CREATE TABLE IF NOT EXISTS batch_lines (
	batch INTEGER NOT NULL,
	idx   INTEGER NOT NULL, -- the input's position, from 0
	line  TEXT NOT NULL,    -- the output line
	meta  TEXT NOT NULL,    -- JSON, the caller's
	PRIMARY KEY (batch, idx)
) WITHOUT ROWID;
`

// ErrBatchExists is wrapped by the error for a batch id the database holds
// already.
var ErrBatchExists = errors.New("it holds a batch with that id already")

// BatchInfo describes a batch of the database.
type BatchInfo struct {
	ID      string
	Spec    []byte
	Started time.Time
	Status  string // "" while unfinished
	Lines   int    // the inputs whose line is saved
	seq     int64
}

// BatchLine is the saved line of one input of a batch.
type BatchLine struct {
	Line, Meta []byte
}

// hasBatches reports whether the batch tables exist.
func (db *DB) hasBatches() (bool, error) {
	rows, err := db.query(`SELECT count(*) FROM sqlite_schema WHERE name = 'batches'`)
	if err != nil {
		return false, err
	}
	return rows[0][0].(int64) > 0, nil
}

// CreateBatch adds a batch with the given id and spec, and locks it for
// this process (see LockBatch). An id the database holds already is
// refused.
func (db *DB) CreateBatch(id string, spec []byte) (*BatchInfo, error) {
	now := time.Now().UTC()
	var b *BatchInfo
	err := db.tx(func() error {
		if err := db.script(batchSchema); err != nil {
			return err
		}
		if rows, err := db.query(`SELECT 1 FROM batches WHERE id = ?`, id); err != nil {
			return err
		} else if len(rows) > 0 {
			return fmt.Errorf("%w: %s", ErrBatchExists, id)
		}
		if err := db.exec(`INSERT INTO batches (id, spec, started_at) VALUES (?, ?, ?)`, id, string(spec), now.Format(timeFormat)); err != nil {
			return err
		}
		rows, err := db.query(`SELECT seq FROM batches WHERE id = ?`, id)
		if err != nil {
			return err
		}
		b = &BatchInfo{ID: id, Spec: spec, Started: now, seq: rows[0][0].(int64)}
		return nil
	})
	if err != nil {
		return nil, &Error{Path: db.path, Err: err}
	}
	if err := db.LockBatch(b); err != nil {
		return nil, err
	}
	return b, nil
}

// Batches lists the batches of the database in the order they were made.
func (db *DB) Batches() ([]*BatchInfo, error) {
	ok, err := db.hasBatches()
	if err != nil || !ok {
		return nil, wrapErr(db, err)
	}
	rows, err := db.query(`SELECT seq, id, spec, started_at, status, (SELECT count(*) FROM batch_lines WHERE batch = seq) FROM batches ORDER BY seq`)
	if err != nil {
		return nil, wrapErr(db, err)
	}
	out := make([]*BatchInfo, 0, len(rows))
	for _, row := range rows {
		b := &BatchInfo{seq: row[0].(int64), ID: str(row[1]), Spec: []byte(str(row[2])), Status: str(row[4]), Lines: int(row[5].(int64))}
		b.Started, _ = time.Parse(time.RFC3339Nano, str(row[3]))
		out = append(out, b)
	}
	return out, nil
}

func wrapErr(db *DB, err error) error {
	if err == nil {
		return nil
	}
	return &Error{Path: db.path, Err: err}
}

// LockBatch makes this process the one that runs the batch until the
// database is closed: another process that tries fails with ErrLocked. As
// Lock, it tries again a moment: a batch that just ended may still share
// its lock with a script it was starting.
func (db *DB) LockBatch(b *BatchInfo) error {
	return db.lockWaiting(1<<41+b.seq, "batch "+b.ID)
}

// SaveBatchLine saves the line of input idx of the batch, in a transaction
// of its own (or, with GroupCommit, with the writes of the runs: Flush
// commits it); saving it again replaces it.
func (db *DB) SaveBatchLine(b *BatchInfo, idx int, line, meta []byte) error {
	save := func() error {
		return db.exec(`INSERT OR REPLACE INTO batch_lines (batch, idx, line, meta) VALUES (?, ?, ?, ?)`, b.seq, int64(idx), string(line), string(meta))
	}
	if db.group == nil {
		return wrapErr(db, save())
	}
	err := db.write1(0, save)
	if _, ok := errors.AsType[*Error](err); ok {
		return err
	}
	return wrapErr(db, err)
}

// BatchLines returns the saved lines of the batch, by input position.
func (db *DB) BatchLines(b *BatchInfo) (map[int]BatchLine, error) {
	rows, err := db.query(`SELECT idx, line, meta FROM batch_lines WHERE batch = ?`, b.seq)
	if err != nil {
		return nil, wrapErr(db, err)
	}
	out := make(map[int]BatchLine, len(rows))
	for _, row := range rows {
		out[int(row[0].(int64))] = BatchLine{Line: []byte(str(row[1])), Meta: []byte(str(row[2]))}
	}
	return out, nil
}

// FinishBatch records how the batch ended ("" again: unfinished).
func (db *DB) FinishBatch(b *BatchInfo, status string) error {
	if err := db.exec(`UPDATE batches SET status = ? WHERE seq = ?`, status, b.seq); err != nil {
		return wrapErr(db, err)
	}
	b.Status = status
	return nil
}
