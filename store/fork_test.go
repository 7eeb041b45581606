package store_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ensemble-run/ensemble/engine"
	"github.com/ensemble-run/ensemble/state"
	"github.com/ensemble-run/ensemble/store"
)

// savedRun runs testEnsemble to its end in db as run id, and returns its
// state after each turn (index: the turn; 0: its start), without clock.
func savedRun(t *testing.T, db *store.DB, id string) []string {
	t.Helper()
	e := testEnsemble(t)
	var w *store.Writer
	var states []string
	opts := engine.Options{Runner: testRunner(), AfterTurn: func(st *state.State) error {
		states = append(states, withoutClock(t, st))
		return w.SaveTurn(st)
	}}
	r := engine.New(e, "go", opts)
	var err error
	if w, err = db.Create(id, r.File(""), stateKey(e)); err != nil {
		t.Fatal(err)
	}
	states = append(states, withoutClock(t, r.State()))
	res := r.Run(context.Background())
	if err := w.Finish(r.State(), res.CompletionReason, nil); err != nil {
		t.Fatal(err)
	}
	w.Close()
	return states
}

// rowsOf is every row a run has in the database, but its id, seq, times
// and parent: what a fork must copy.
func rowsOf(t *testing.T, path, id string, upTo int) string {
	t.Helper()
	raw, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	var b strings.Builder
	dump := func(q string, args ...any) {
		rows, err := raw.Query(q, args...)
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		cols, _ := rows.Columns()
		for rows.Next() {
			v := make([]any, len(cols))
			p := make([]any, len(cols))
			for i := range v {
				p[i] = &v[i]
			}
			if err := rows.Scan(p...); err != nil {
				t.Fatal(err)
			}
			for i := range v {
				if s, ok := v[i].([]byte); ok {
					v[i] = string(s)
				}
			}
			fmt.Fprintf(&b, "%v\n", v)
		}
	}
	dump(`SELECT ensemble, responses, profiles, options, base, snapshot FROM runs WHERE id = ?`, id)
	dump(`SELECT turn, records, counts, context, edges, memory, pending, saved_at FROM turns
		WHERE run = (SELECT seq FROM runs WHERE id = ?) AND turn <= ? ORDER BY key`, id, upTo)
	dump(`SELECT idx, warning FROM warnings WHERE run = (SELECT seq FROM runs WHERE id = ?)
		AND json_extract(warning, '$.turn_number') <= ? ORDER BY idx`, id, upTo)
	return b.String()
}

// A fork from turn k is the run as of its turn k: its rows up to turn k
// copied as they are (the warnings of those turns numbered from 0), its
// state loaded back the state the run had then, its parent recorded. The
// run forked is not changed. A fork of a fork works, and turns outside the
// run are refused, naming both numbers.
func TestForkCopiesTheTurnsUpToIt(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "fork.db")
	db, err := store.Open(path, true, "")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	states := savedRun(t, db, "first")
	last := len(states) - 1
	if last < 6 {
		t.Fatalf("the test run has %d turns, want more", last)
	}
	first, err := db.Run("first")
	if err != nil {
		t.Fatal(err)
	}
	before := rowsOf(t, path, "first", 1<<31)
	whole, err := db.Load(first)
	if err != nil {
		t.Fatal(err)
	}
	fewer, some := false, false // forks with fewer warnings than the run, with some
	for k := 0; k <= last; k++ {
		fork, err := db.Fork(first, k, fmt.Sprintf("fork-%d", k))
		if err != nil {
			t.Fatalf("turn %d: %v", k, err)
		}
		if fork.Parent != "first" || fork.ParentTurn != k || fork.Turns != k || fork.CompletionReason != "" {
			t.Errorf("fork from turn %d listed as %+v", k, fork)
		}
		if got, want := rowsOf(t, path, fork.ID, 1<<31), rowsOf(t, path, "first", k); got != want {
			t.Fatalf("fork from turn %d holds\n%s\nwant\n%s", k, got, want)
		}
		f, err := db.Load(fork)
		if err != nil {
			t.Fatal(err)
		}
		if got := withoutClock(t, f.State); got != states[k] {
			t.Fatalf("fork from turn %d loads\n%s\nwant\n%s", k, got, states[k])
		}
		if f.Parent == nil || *f.Parent != (state.Parent{Run: "first", Turn: k}) || f.CompletionReason != "" {
			t.Errorf("fork from turn %d loads parent %+v, reason %q", k, f.Parent, f.CompletionReason)
		}
		at, err := db.LoadAt(first, k)
		if err != nil {
			t.Fatal(err)
		}
		if got := withoutClock(t, at.State); got != states[k] || at.Parent.Turn != k || at.CompletionReason != "" {
			t.Fatalf("run as of turn %d loads\n%s\nwant\n%s", k, got, states[k])
		}
		fewer = fewer || len(f.State.Warnings()) < len(whole.State.Warnings())
		some = some || len(f.State.Warnings()) > 0
	}
	if !fewer || !some {
		t.Error("no fork has some of the run's warnings, or none has fewer: the test does not test their copy")
	}
	if after := rowsOf(t, path, "first", 1<<31); after != before {
		t.Errorf("the run forked changed:\n%s\nwas\n%s", after, before)
	}

	// A fork of a fork.
	f4, err := db.Run("fork-4")
	if err != nil {
		t.Fatal(err)
	}
	ff, err := db.Fork(f4, 2, "fork-4-2")
	if err != nil {
		t.Fatal(err)
	}
	f, err := db.Load(ff)
	if err != nil {
		t.Fatal(err)
	}
	if got := withoutClock(t, f.State); got != states[2] || ff.Parent != "fork-4" || ff.ParentTurn != 2 {
		t.Errorf("fork of a fork: %+v loads\n%s\nwant\n%s", ff, got, states[2])
	}

	for _, k := range []int{-1, last + 1} {
		_, err := db.Fork(first, k, fmt.Sprintf("bad%d", k+1))
		var fe *store.ForkError
		if !errors.As(err, &fe) || !strings.Contains(err.Error(), fmt.Sprintf("turn %d", k)) || !strings.Contains(err.Error(), fmt.Sprintf("%d turns", last)) {
			t.Errorf("fork from turn %d: %v, want a ForkError naming %d and %d", k, err, k, last)
		}
		if _, err := db.LoadAt(first, k); !errors.As(err, &fe) {
			t.Errorf("load as of turn %d: %v, want a ForkError", k, err)
		}
	}
	if _, err := db.Fork(first, 1, "fork-1"); err == nil || !strings.Contains(err.Error(), "fork-1 already") {
		t.Errorf("a fork with an id taken: %v", err)
	}
	runs, err := db.Runs()
	if err != nil {
		t.Fatal(err)
	}
	if runs[0].Parent != "" || runs[0].ParentTurn != 0 || len(runs) != last+3 {
		t.Errorf("runs %+v", runs)
	}
}

// The schema of version 2: that of version 3 without a run's parent.
const schemaV2 = `
CREATE TABLE runs (
	seq INTEGER PRIMARY KEY, id TEXT NOT NULL UNIQUE, ensemble TEXT NOT NULL, responses TEXT, profiles TEXT,
	options TEXT NOT NULL, started_at TEXT NOT NULL, saved_at TEXT NOT NULL,
	completion_reason TEXT NOT NULL DEFAULT '', base INTEGER NOT NULL, snapshot TEXT NOT NULL
);
CREATE TABLE turns (
	key INTEGER PRIMARY KEY, run INTEGER NOT NULL, turn INTEGER NOT NULL, records TEXT NOT NULL, counts TEXT NOT NULL,
	context TEXT, edges TEXT, memory TEXT, pending TEXT, saved_at TEXT NOT NULL
);
CREATE TABLE warnings (
	run INTEGER NOT NULL, idx INTEGER NOT NULL, warning TEXT NOT NULL,
	PRIMARY KEY (run, idx)
) WITHOUT ROWID;
PRAGMA application_id = 1701737265;
PRAGMA user_version = 2;
`

// A database of version 2 is migrated when it is opened: its runs are no
// forks and load as they were saved, can be forked, and the file is of
// the current version afterwards.
func TestVersion2DatabaseIsMigrated(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	src := filepath.Join(dir, "v3.db")
	db, err := store.Open(src, true, "")
	if err != nil {
		t.Fatal(err)
	}
	states := savedRun(t, db, "done")
	db.Close()

	path := filepath.Join(dir, "v2.db")
	sqliteFile(t, path, "PRAGMA journal_mode = wal;"+schemaV2+`;
		ATTACH DATABASE '`+src+`' AS v3;
		INSERT INTO runs SELECT seq, id, ensemble, responses, profiles, options, started_at, saved_at, completion_reason, base, snapshot FROM v3.runs;
		INSERT INTO turns SELECT * FROM v3.turns;
		INSERT INTO warnings SELECT * FROM v3.warnings;
		DETACH DATABASE v3`)

	db, err = store.Open(path, false, "")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	done, err := db.Run("done")
	if err != nil {
		t.Fatal(err)
	}
	if done.Parent != "" || done.ParentTurn != 0 {
		t.Errorf("a run of version 2 has a parent: %+v", done)
	}
	f, err := db.Load(done)
	if err != nil {
		t.Fatal(err)
	}
	if got := withoutClock(t, f.State); got != states[len(states)-1] || f.Parent != nil {
		t.Fatalf("run loaded (parent %v)\n%s\nwant\n%s", f.Parent, got, states[len(states)-1])
	}
	fork, err := db.Fork(done, 3, "fork")
	if err != nil {
		t.Fatal(err)
	}
	if f, err = db.Load(fork); err != nil || withoutClock(t, f.State) != states[3] {
		t.Fatalf("fork of a migrated run: %v", err)
	}
	if v := sqliteInt(t, path, "PRAGMA user_version"); v != 4 {
		t.Fatalf("user_version %d, want 4", v)
	}
}

// A database of a later version than this release knows is refused, by
// its version, as an older release refuses a database of version 4.
func TestLaterVersionIsRefused(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "later.db")
	db, err := store.Open(path, true, "")
	if err != nil {
		t.Fatal(err)
	}
	db.Close()
	sqliteFile(t, path, "PRAGMA user_version = 5")
	_, err = store.Open(path, false, "")
	if !errors.Is(err, state.ErrUnknownVersion) || !strings.Contains(err.Error(), "versions 1 to 4") {
		t.Errorf("a database of version 5: %v", err)
	}
}

// What a run reported of the turn it cut short is saved with its end, not
// as a turn: Load returns it; a fork (of a committed turn) and a run that
// goes on (Continue, which plays that turn again) have none.
func TestStoppedIsSavedWithTheEnd(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "runs.db")
	db, err := store.Open(path, true, "")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	e := testEnsemble(t)
	var w *store.Writer
	r := engine.New(e, "go", engine.Options{Runner: testRunner(), AfterTurn: func(st *state.State) error { return w.SaveTurn(st) }})
	if w, err = db.Create("cut", r.File(""), stateKey(e)); err != nil {
		t.Fatal(err)
	}
	r.Run(context.Background())
	stopped := &state.Stopped{
		Errors:       []state.RunError{{TurnNumber: 9, AgentName: "b", Message: "stopped before it finished: the run reached its timeout"}},
		Usage:        &state.Usage{Requests: 1, InputTokens: 7},
		UsageByAgent: map[string]*state.Usage{"b": {Requests: 1, InputTokens: 7}},
	}
	if err := w.Finish(r.State(), engine.Timeout, stopped); err != nil {
		t.Fatal(err)
	}
	w.Close()
	run, err := db.Run("cut")
	if err != nil {
		t.Fatal(err)
	}
	f, err := db.Load(run)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := fmt.Sprint(f.Stopped.Errors, *f.Stopped.Usage, *f.Stopped.UsageByAgent["b"]), fmt.Sprint(stopped.Errors, *stopped.Usage, *stopped.UsageByAgent["b"]); got != want || f.CompletionReason != engine.Timeout {
		t.Fatalf("loaded %s (%q), want %s", got, f.CompletionReason, want)
	}
	// The head the inspector reads has it too, and a fork's has not.
	if h, err := db.Head(run); err != nil || h.Stopped == nil || fmt.Sprint(h.Stopped.Errors) != fmt.Sprint(stopped.Errors) {
		t.Fatalf("the head's stopped: %+v (%v)", h, err)
	}
	fork, err := db.Fork(run, 1, "fork")
	if err != nil {
		t.Fatal(err)
	}
	if h, err := db.Head(fork); err != nil || h.Stopped != nil {
		t.Fatalf("a fork's head has what its parent reported at its end: %+v (%v)", h, err)
	}
	if ff, err := db.Load(fork); err != nil || ff.Stopped != nil {
		t.Fatalf("a fork has what its parent reported at its end: %+v (%v)", ff.Stopped, err)
	}
	if ff, err := db.LoadAt(run, 1); err != nil || ff.Stopped != nil {
		t.Fatalf("the run as of turn 1 has what it reported at its end: %+v (%v)", ff.Stopped, err)
	}
	if err := db.Lock(run); err != nil {
		t.Fatal(err)
	}
	if w, err = db.Continue(run, f, stateKey(e)); err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if f, err = db.Load(run); err != nil || f.Stopped != nil || f.CompletionReason != "" {
		t.Fatalf("a run that goes on keeps what it reported at its end: %+v %q (%v)", f.Stopped, f.CompletionReason, err)
	}
}

// A run read before it was replaced by a run of the same id (run --run-id
// over a finished run) is not forked: the fork would copy the rows of the
// new run, while what goes on from them was read from the old one.
func TestForkOfAReplacedRunIsRefused(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "replaced.db")
	db, err := store.Open(path, true, "")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	savedRun(t, db, "first")
	old, err := db.Run("first")
	if err != nil {
		t.Fatal(err)
	}
	savedRun(t, db, "first") // replaced
	if _, err := db.Fork(old, 2, "fork"); err == nil || !strings.Contains(err.Error(), "replaced") {
		t.Errorf("a fork of a run replaced since it was read: %v, want it refused", err)
	}
	if _, err := db.LoadAt(old, 2); err == nil || !strings.Contains(err.Error(), "replaced") {
		t.Errorf("a run replaced since it was read, loaded as of turn 2: %v, want it refused", err)
	}
	now, err := db.Run("first")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Fork(now, 2, "fork-now"); err != nil {
		t.Errorf("a fork of the run as it is now: %v", err)
	}
}

// A database of version 3 (runs without what they cut short) opened by
// several processes at once is migrated once: every open succeeds, reads
// the runs as they were saved, and the file is of version 4 after.
func TestVersion3DatabaseOpenedAtOnce(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "v3.db")
	db, err := store.Open(path, true, "")
	if err != nil {
		t.Fatal(err)
	}
	states := savedRun(t, db, "done")
	db.Close()
	sqliteFile(t, path, "ALTER TABLE runs DROP COLUMN stopped; PRAGMA user_version = 3")
	const n = 6
	errs := make(chan error, n)
	for range n {
		go func() {
			errs <- func() error {
				db, err := store.Open(path, false, "")
				if err != nil {
					return err
				}
				defer db.Close()
				done, err := db.Run("done")
				if err != nil {
					return err
				}
				f, err := db.Load(done)
				if err == nil && withoutClock(t, f.State) != states[len(states)-1] {
					err = errors.New("the run loads otherwise")
				}
				return err
			}()
		}()
	}
	for range n {
		if err := <-errs; err != nil {
			t.Errorf("an open during the migration: %v", err)
		}
	}
	if v := sqliteInt(t, path, "PRAGMA user_version"); v != 4 {
		t.Fatalf("user_version %d, want 4", v)
	}
	if n := sqliteInt(t, path, "SELECT count(*) FROM pragma_table_info('runs') WHERE name = 'stopped'"); n != 1 {
		t.Errorf("runs has %d columns stopped, want 1", n)
	}
}
