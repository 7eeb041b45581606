package store

import (
	"bytes"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/ensemble-run/ensemble/internal/jsonw"
	"github.com/ensemble-run/ensemble/state"
)

// Writer writes one run, turn by turn: the run's one writer, holding its
// lock (see DB.Lock).
type Writer struct {
	db  *DB
	run *RunInfo
	// stateKey names the accumulated_context key of an agent's outputs.
	stateKey func(agent string) string

	// What is saved already: the records and warnings, the turn, each
	// agent's outputs count and memory.
	records, warnings, turn int
	outputs                 map[string]int
	memory                  map[string][]byte

	insertTurn, insertWarning, begin, commit *sql.Stmt

	// Reused from turn to turn: the records' JSON, the agents of the
	// turn's records.
	rec    []byte
	agents []string

	row turnRow // the values of a turn's row, reused

	bg atomic.Pointer[behind] // the goroutine that writes the rows, after Background

	// shared: the database is used by several runs at once, and the writer
	// holds its lock (Hold) itself, only for its statements: a turn's row is
	// encoded before, so that the runs encode in parallel and take turns
	// only at SQLite (CreateShared). Otherwise its caller holds what it must.
	shared bool
}

// keepRecords is the most bytes of a turn's records whose buffer the
// writer reuses for the next turn: a larger one is handed to the row.
const keepRecords = 1 << 20

// turnColumns is the number of values of a row of turns.
const turnColumns = 9

// Start begins the writes of a run with the file f: a new run, with the id
// given (which must be locked by the caller if it already exists, see
// Create), or a run loaded from this database that goes on (its meta data,
// the files and options it is resumed with, are updated and its completion
// reason, and what it reported of a turn it cut short, cleared). stateKey maps an agent to its state key.
func (db *DB) start(r *RunInfo, f *state.File, stateKey func(string) string) (*Writer, error) {
	w := &Writer{db: db, run: r, stateKey: stateKey}
	w.reset(f.State)
	var err error
	prep := func(q string) *sql.Stmt {
		if err != nil {
			return nil
		}
		var s *sql.Stmt
		s, err = db.prepared(q)
		return s
	}
	w.begin = prep("BEGIN IMMEDIATE")
	w.commit = prep("COMMIT")
	w.insertTurn = prep(`INSERT INTO turns (key, run, turn, records, counts, context, edges, memory, pending, saved_at) VALUES ((?1 << 32) | ?2, ?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)`)
	w.insertWarning = prep(`INSERT INTO warnings (run, idx, warning) VALUES (?, ?, ?)`)
	if err != nil {
		w.Close()
		return nil, &Error{Path: db.path, Err: explain(err)}
	}
	return w, nil
}

func (w *Writer) reset(st *state.State) {
	w.records, w.warnings, w.turn = len(st.History()), len(st.Warnings()), st.TurnCount
	w.outputs = maps.Clone(st.Contents().OutputCount)
	if w.outputs == nil {
		w.outputs = map[string]int{}
	}
	w.memory = make(map[string][]byte, len(st.Contents().Memory))
	for k, v := range st.Contents().Memory {
		w.memory[k] = v
	}
}

// Create adds a run with the given id holding f (the state of a run before
// its first turn, or any saved state), locks it and returns its writer.
// An id the database holds already is refused unless the run has finished:
// then replace decides (its turns are dropped, the new run takes its place).
func (db *DB) Create(id string, f *state.File, stateKey func(string) string) (*Writer, error) {
	return db.create(id, f, stateKey, false)
}

// CreateShared is Create on a database that several runs use at once,
// whose every use holds its lock (Hold): the caller does not hold it. It
// encodes f first, then holds the lock for its statements; the writer it
// returns does the same at each save (see Writer.shared).
func (db *DB) CreateShared(id string, f *state.File, stateKey func(string) string) (*Writer, error) {
	return db.create(id, f, stateKey, true)
}

func (db *DB) create(id string, f *state.File, stateKey func(string) string, shared bool) (*Writer, error) {
	now := time.Now().UTC()
	snapshot, err := json.Marshal(f.State)
	if err != nil {
		return nil, &Error{Path: db.path, Err: err}
	}
	ref, resp, profiles, opts, err := meta(f)
	if err != nil {
		return nil, &Error{Path: db.path, Err: err}
	}
	if shared {
		db.Hold()
		defer db.Release()
	}
	for {
		// A new id, the usual case: one statement, which adds nothing
		// when the id is taken.
		var r *RunInfo
		err := db.write1(0, func() error {
			rows, err := db.query(`INSERT OR IGNORE INTO runs (id, ensemble, responses, profiles, options, started_at, saved_at, base, snapshot)
				VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING seq`,
				id, ref, resp, profiles, opts, now.Format(timeFormat), now.Format(timeFormat), int64(f.State.TurnCount), snapshot)
			if err == nil && len(rows) == 1 {
				r = &RunInfo{seq: rows[0][0].(int64), ID: id, Ensemble: f.Ensemble.Name, Started: now, Saved: now, Turns: f.State.TurnCount}
			}
			return err
		})
		if err != nil {
			if _, ok := errors.AsType[*Error](err); ok {
				return nil, err
			}
			return nil, &Error{Path: db.path, Err: err}
		}
		if r != nil {
			if err := db.Lock(r); err != nil {
				return nil, err
			}
			return db.startLocked(r, f, stateKey, shared)
		}
		old, err := db.Run(id)
		if errors.Is(err, ErrNoRun) {
			continue // removed meanwhile: the loop tries again
		} else if err != nil {
			return nil, err
		}
		if err := db.Lock(old); err != nil {
			return nil, err
		}
		if old.Resumable() {
			db.Unlock(old)
			return nil, &ExistsError{Path: db.path, Run: old}
		}
		err = db.write(0, func() error {
			for _, q := range []string{`DELETE FROM turns WHERE ` + turnsOf("?1"), `DELETE FROM warnings WHERE run = ?`} {
				if err := db.exec(q, old.seq); err != nil {
					return err
				}
			}
			return db.exec(`UPDATE runs SET ensemble = ?, responses = ?, profiles = ?, options = ?, started_at = ?, saved_at = ?,
				completion_reason = '', stopped = NULL, base = ?, snapshot = ?, parent = NULL, parent_turn = 0 WHERE seq = ?`,
				ref, resp, profiles, opts, now.Format(timeFormat), now.Format(timeFormat), int64(f.State.TurnCount), snapshot, old.seq)
		})
		if err != nil {
			db.Unlock(old)
			return nil, &Error{Path: db.path, Err: err}
		}
		old.CompletionReason, old.Turns, old.Started = "", f.State.TurnCount, now
		old.Parent, old.ParentTurn = "", 0
		return db.startLocked(old, f, stateKey, shared)
	}
}

func (db *DB) startLocked(r *RunInfo, f *state.File, stateKey func(string) string, shared bool) (*Writer, error) {
	w, err := db.start(r, f, stateKey)
	if err != nil {
		db.Unlock(r)
		return nil, err
	}
	w.shared = shared
	return w, nil
}

// Continue returns the writer of a run loaded from this database (with
// Load, after Lock) that goes on: its files and options become f's, and
// its completion reason and what it reported of a turn it cut short are
// cleared (a resume plays that turn again).
func (db *DB) Continue(r *RunInfo, f *state.File, stateKey func(string) string) (*Writer, error) {
	ref, resp, profiles, opts, err := meta(f)
	if err != nil {
		return nil, &Error{Path: db.path, Err: err}
	}
	err = db.write(0, func() error {
		return db.exec(`UPDATE runs SET ensemble = ?, responses = ?, profiles = ?, options = ?, saved_at = ?, completion_reason = '', stopped = NULL WHERE seq = ?`,
			ref, resp, profiles, opts, time.Now().UTC().Format(timeFormat), r.seq)
	})
	if err != nil {
		return nil, &Error{Path: db.path, Err: err}
	}
	return db.start(r, f, stateKey)
}

// ContinueShared is Continue on a database that several runs use at once
// (see CreateShared): the caller does not hold its lock.
func (db *DB) ContinueShared(r *RunInfo, f *state.File, stateKey func(string) string) (*Writer, error) {
	db.Hold()
	defer db.Release()
	w, err := db.Continue(r, f, stateKey)
	if err == nil {
		w.shared = true
	}
	return w, err
}

// ExistsError is a run id that names an unfinished run already.
type ExistsError struct {
	Path string
	Run  *RunInfo
}

func (e *ExistsError) Error() string {
	return fmt.Sprintf("%s holds a run %s that has not finished", e.Path, e.Run.ID)
}

// meta encodes the columns of runs that f names.
func meta(f *state.File) (ref, resp, profiles, opts any, err error) {
	b, err := json.Marshal(f.Ensemble)
	if err != nil {
		return
	}
	ref = string(b)
	if f.Responses != nil {
		if b, err = json.Marshal(f.Responses); err != nil {
			return
		}
		resp = string(b)
	}
	if len(f.Profiles) > 0 {
		if b, err = json.Marshal(f.Profiles); err != nil {
			return
		}
		profiles = string(b)
	}
	if b, err = json.Marshal(f.Options); err != nil {
		return
	}
	opts = string(b)
	return
}

// Close writes the turns still queued (after Background) and releases the
// run's lock; the database stays open, with the statements the writer
// used. It returns the error of a write in the background that failed
// (unless Finish returned it already: then nil).
func (w *Writer) Close() error {
	err := w.stopBehind()
	w.begin, w.commit, w.insertTurn, w.insertWarning = nil, nil, nil, nil
	w.hold()
	w.db.Unlock(w.run)
	w.release()
	return err
}

// hold and release take and let go of the database's lock around a shared
// writer's statements (see Writer.shared).
func (w *Writer) hold() {
	if w.shared {
		w.db.Hold()
	}
}

func (w *Writer) release() {
	if w.shared {
		w.db.Release()
	}
}

// Run is the run the writer writes.
func (w *Writer) Run() *RunInfo { return w.run }

// SaveTurn writes what the turns completed since the last save added to st,
// in one transaction: the new history records, and of the agents they are
// of (the only agents a turn changes, see engine.Run's commit) the
// execution and output counts, the outputs they added to the accumulated
// context, the bookkeeping of their dependency edges and their memory; the
// pending agent requests, the new warnings and the turn count. Its cost is
// that of what the turn added, not of the whole state.
func (w *Writer) SaveTurn(st *state.State) error {
	return w.save(st, "", nil, false)
}

// Finish writes what is left of st, the run's completion reason and what
// the run reported of the turn it cut short (nil: none), which is kept
// beside its turns, never as one.
func (w *Writer) Finish(st *state.State, reason string, stopped *state.Stopped) error {
	return w.save(st, reason, stopped, true)
}

func (w *Writer) save(st *state.State, reason string, stopped *state.Stopped, final bool) error {
	b := w.bg.Load()
	if b != nil {
		var err error
		if final {
			err = w.stopBehind() // what is queued first; then this, on this goroutine
			b = nil
		} else {
			err = b.failed()
		}
		if err != nil {
			return err
		}
	}
	if len(st.History()) < w.records || st.TurnCount < w.turn || len(st.Warnings()) < w.warnings {
		return &Error{Path: w.db.path, Err: errors.New("the state went back since it was last saved")}
	}
	var stop any // NULL: none
	if final && stopped != nil {
		b, err := json.Marshal(stopped)
		if err != nil {
			return &Error{Path: w.db.path, Err: err}
		}
		stop = string(b)
	}
	var row []any
	if st.TurnCount > w.turn {
		var err error
		if row, err = w.delta(st); err != nil {
			return &Error{Path: w.db.path, Err: err}
		}
	}
	newWarnings := st.Warnings()[w.warnings:]
	if row == nil && len(newWarnings) == 0 && !final {
		return nil
	}
	saved := 0
	if row != nil {
		saved = 1
	}
	w.hold()
	defer w.release()
	var err error
	switch {
	case row != nil && len(newWarnings) == 0 && b != nil:
		if err := b.queue(&w.row); err != nil {
			return err
		}
		w.mark(st)
		return nil
	case w.db.group != nil:
		write := w.db.write
		if saved+len(newWarnings)+btoi(final) == 1 {
			write = w.db.write1 // one statement: atomic without a savepoint
		}
		err = write(saved, func() error { return w.write(row, newWarnings, final, reason, stop) })
		if err == nil && final && w.db.group.finish {
			err = w.db.Flush()
		}
		if _, ok := errors.AsType[*Error](err); ok {
			return err // the group's, which names the file
		}
	case row != nil && len(newWarnings) == 0 && !final:
		// The turn's one row: a statement outside BEGIN and COMMIT is a
		// transaction of its own, without running those two statements.
		_, err = w.insertTurn.ExecContext(w.db.ctx, row...)
	default:
		if err = w.Wait(); err != nil {
			return err // a turn before is missing: nothing after it is written
		}
		err = w.db.tx2(w.begin, w.commit, func() error { return w.write(row, newWarnings, final, reason, stop) })
	}
	if err != nil {
		return &Error{Path: w.db.path, Err: explain(err)}
	}
	if w.db.group == nil {
		w.db.committed(saved)
	}
	w.mark(st)
	if final {
		w.run.CompletionReason = reason
	}
	return nil
}

// write writes a save's row (or none), its new warnings and, when final,
// how the run ended, inside the caller's transaction.
func (w *Writer) write(row []any, newWarnings []state.Warning, final bool, reason string, stop any) error {
	if row != nil {
		if _, err := w.insertTurn.ExecContext(w.db.ctx, row...); err != nil {
			return err
		}
	}
	for i, wn := range newWarnings {
		b, err := json.Marshal(wn)
		if err != nil {
			return err
		}
		if _, err := w.insertWarning.ExecContext(w.db.ctx, w.run.seq, int64(w.warnings+i), string(b)); err != nil {
			return err
		}
	}
	if final {
		return w.db.exec(`UPDATE runs SET completion_reason = ?, stopped = ?, saved_at = ? WHERE seq = ?`,
			reason, stop, time.Now().UTC().Format(timeFormat), w.run.seq)
	}
	return nil
}

// mark moves the marks of what is saved to st.
func (w *Writer) mark(st *state.State) {
	for _, r := range st.History()[w.records:] {
		w.outputs[r.AgentName] = st.Outputs(r.AgentName)
		if m := st.Memory(r.AgentName); m != nil {
			w.memory[r.AgentName] = m
		}
	}
	w.records, w.warnings, w.turn = len(st.History()), len(st.Warnings()), st.TurnCount
}

// delta encodes the row of turns for what st gained since the last save.
func (w *Writer) delta(st *state.State) ([]any, error) {
	recs := st.History()[w.records:]
	if len(recs) == 0 {
		return nil, fmt.Errorf("turn %d has no history record (every turn runs an agent)", st.TurnCount)
	}
	if st.TurnCount > maxTurn {
		return nil, fmt.Errorf("turn %d: a run holds at most %d turns", st.TurnCount, maxTurn)
	}
	w.agents = w.agents[:0]
	for _, r := range recs {
		if r.Of == "" && !slices.Contains(w.agents, r.AgentName) { // an instance's agent has its own record
			w.agents = append(w.agents, r.AgentName)
		}
	}
	// The records and the context values through the printed result's JSON
	// writer (docs/performance.md, "Durable runs"), the rest through
	// encoding/json.
	var err error
	w.rec = append(w.rec[:0], '[')
	for i, r := range recs {
		if i > 0 {
			w.rec = append(w.rec, ',')
		}
		if w.rec, err = r.AppendIndent(w.rec, "", ""); err != nil {
			return nil, err
		}
	}
	w.rec = append(w.rec, ']')
	w.row[0], w.row[1] = w.run.seq, int64(st.TurnCount)
	if len(w.rec) > keepRecords {
		// A large turn (a fan-out's records): its buffer becomes the
		// row's text as it is, rather than copied, and is not kept for
		// the next turns. Nothing writes to it again.
		w.row[2] = unsafe.String(&w.rec[0], len(w.rec))
		w.rec = nil
	} else {
		w.row[2] = string(w.rec)
	}
	counts := make(map[string][2]int, len(w.agents))
	var (
		context []byte // [[state key, value], …], in the order of the agents
		edges   map[string]map[string]*state.EdgeState
		memory  map[string]json.RawMessage
	)
	for _, a := range w.agents {
		counts[a] = [2]int{st.Executions(a), st.Outputs(a)}
		if st.Outputs(a) != w.outputs[a] {
			key := w.stateKey(a)
			if v, ok := st.Context()[key]; ok {
				if context, err = appendContext(context, key, v); err != nil {
					return nil, err
				}
			}
		}
		if m := st.Edges(a); m != nil {
			if edges == nil {
				edges = map[string]map[string]*state.EdgeState{}
			}
			edges[a] = m
		}
		if m := st.Memory(a); m != nil && !bytes.Equal(m, w.memory[a]) {
			if memory == nil {
				memory = map[string]json.RawMessage{}
			}
			memory[a] = m
		}
	}
	// A column of nothing is NULL.
	put := func(col int, some bool, v any) {
		w.row[col] = nil
		if some && err == nil {
			w.row[col], err = marshal(v)
		}
	}
	put(3, true, counts)
	if w.row[4] = nil; context != nil {
		w.row[4] = string(append(context, ']'))
	}
	put(5, len(edges) > 0, edges)
	put(6, len(memory) > 0, memory)
	put(7, len(st.Pending()) > 0, st.Pending())
	if err != nil {
		return nil, err
	}
	w.row[8] = time.Now().UTC().Format(timeFormat)
	return w.row[:], nil
}

// marshal is v as encoding/json writes it, as a string.
func marshal(v any) (string, error) {
	b, err := json.Marshal(v)
	return string(b), err
}

// appendContext appends the context entry [key, v] to buf, the list it
// opens when empty, through the result's JSON writer.
func appendContext(buf []byte, key string, v any) ([]byte, error) {
	if buf == nil {
		buf = append(buf, '[')
	} else {
		buf = append(buf, ',')
	}
	buf = jsonw.AppendString(append(buf, '['), key)
	buf, err := jsonw.AppendIndent(append(buf, ','), v, "", "", 0)
	return append(buf, ']'), err
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}
