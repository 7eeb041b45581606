package store_test

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ensemble-run/ensemble/engine"
	"github.com/ensemble-run/ensemble/state"
	"github.com/ensemble-run/ensemble/store"
)

// A turn appends its row to the last page of the turns table: that page
// written to the WAL, and when it is full a new one with the table's root
// and the database's first page (1.5 pages a turn for rows of this size).
// Version 1's table without rowid, keyed by (run, turn), rebalanced the
// last leaf pages at nearly every insert: 2.9 pages a turn here.
func TestTurnWritesAboutOnePage(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "pages.db")
	db, err := store.Open(path, true, "")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	st := state.New("go")
	f := &state.File{Ensemble: state.FileRef{Name: "pages", Path: "/pages.yaml", SHA256: fmt.Sprintf("%064x", 1)}, State: st}
	w, err := db.Create("pages", f, func(s string) string { return s })
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	walSize := func() int64 {
		fi, err := os.Stat(path + "-wal")
		if err != nil {
			t.Fatal(err)
		}
		return fi.Size()
	}
	text := strings.Repeat("a review of the draft, ", 12) // a row of about 700 bytes
	save := func(turn int) {
		pingPongTurn(st, turn, map[string]any{"n": float64(turn), "text": text})
		if err := w.SaveTurn(st); err != nil {
			t.Fatal(err)
		}
	}
	for turn := 1; turn <= 20; turn++ {
		save(turn)
	}
	before := walSize()
	const turns = 150 // under the 1,000 pages at which SQLite folds the WAL back
	for turn := 21; turn < 21+turns; turn++ {
		save(turn)
	}
	const frame = 24 + 4096 // a WAL frame: its header and a page
	perTurn := float64(walSize()-before) / frame / turns
	t.Logf("%.2f pages a turn", perTurn)
	if perTurn > 2 {
		t.Errorf("a turn wrote %.2f pages to the WAL, want about 1.5", perTurn)
	}
}

// The schema of version 1, as the first release of the store wrote it.
const schemaV1 = `
CREATE TABLE runs (
	seq INTEGER PRIMARY KEY, id TEXT NOT NULL UNIQUE, ensemble TEXT NOT NULL, responses TEXT, profiles TEXT,
	options TEXT NOT NULL, started_at TEXT NOT NULL, saved_at TEXT NOT NULL,
	completion_reason TEXT NOT NULL DEFAULT '', base INTEGER NOT NULL, snapshot TEXT NOT NULL
);
CREATE TABLE turns (
	run INTEGER NOT NULL, turn INTEGER NOT NULL, records TEXT NOT NULL, counts TEXT NOT NULL,
	context TEXT, edges TEXT, memory TEXT, pending TEXT, saved_at TEXT NOT NULL,
	PRIMARY KEY (run, turn)
) WITHOUT ROWID;
CREATE TABLE warnings (
	run INTEGER NOT NULL, idx INTEGER NOT NULL, warning TEXT NOT NULL,
	PRIMARY KEY (run, idx)
) WITHOUT ROWID;
PRAGMA application_id = 1701737265;
PRAGMA user_version = 1;
`

// A database of version 1 is read and written in its own layout: a run
// saved turn by turn loads as the run in memory, is listed with its turns,
// and a finished run's id can be run again; the file stays version 1.
func TestVersion1DatabaseStillWorks(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "v1.db")
	raw, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := raw.Exec("PRAGMA journal_mode = wal;" + schemaV1); err != nil {
		t.Fatal(err)
	}
	raw.Close()

	e := testEnsemble(t)
	for round := range 2 { // the second replaces the finished first
		db, err := store.Open(path, true, "")
		if err != nil {
			t.Fatal(err)
		}
		var w *store.Writer
		r := engine.New(e, "go", engine.Options{Runner: testRunner(), AfterTurn: func(st *state.State) error { return w.SaveTurn(st) }})
		if w, err = db.Create("run", r.File(""), stateKey(e)); err != nil {
			t.Fatalf("round %d: %v", round, err)
		}
		res := r.Run(context.Background())
		if err := w.Finish(r.State(), res.CompletionReason); err != nil {
			t.Fatal(err)
		}
		w.Close()
		runs, err := db.Runs()
		if err != nil {
			t.Fatal(err)
		}
		if len(runs) != 1 || runs[0].Turns != r.State().TurnCount || runs[0].CompletionReason != res.CompletionReason {
			t.Fatalf("round %d: runs %+v, want one of %d turns, %s", round, runs[0], r.State().TurnCount, res.CompletionReason)
		}
		f, err := db.Load(runs[0])
		if err != nil {
			t.Fatal(err)
		}
		if got, want := withoutClock(t, f.State), withoutClock(t, r.State()); got != want {
			t.Fatalf("round %d: loaded\n%s\nwant\n%s", round, got, want)
		}
		db.Close()
	}
	raw, err = sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	var v int
	if err := raw.QueryRow("PRAGMA user_version").Scan(&v); err != nil || v != 1 {
		t.Fatalf("user_version %d (%v), want 1", v, err)
	}
}
