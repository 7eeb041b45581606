package store_test

import (
	"context"
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

// A database of version 1 is migrated when it is opened, in one step: its
// runs load as they were saved, go on in the layout of version 2, and the
// file is of version 2 afterwards.
func TestVersion1DatabaseIsMigrated(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	e := testEnsemble(t)
	// A finished run and a run cut short after its second turn, saved by
	// this release, then copied into the tables of version 1.
	src := filepath.Join(dir, "v2.db")
	db, err := store.Open(src, true, "")
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{}
	for _, id := range []string{"done", "cut"} {
		var w *store.Writer
		opts := engine.Options{Runner: testRunner(), AfterTurn: func(st *state.State) error { return w.SaveTurn(st) }}
		if id == "cut" {
			opts.MaxTurns = 2
		}
		r := engine.New(e, "go", opts)
		if w, err = db.Create(id, r.File(""), stateKey(e)); err != nil {
			t.Fatal(err)
		}
		res := r.Run(context.Background())
		reason := res.CompletionReason
		if id == "cut" {
			reason = "" // as a killed run leaves it
		} else if err := w.Finish(r.State(), reason, nil); err != nil {
			t.Fatal(err)
		}
		w.Close()
		want[id] = withoutClock(t, r.State())
	}
	db.Close()

	path := filepath.Join(dir, "v1.db")
	sqliteFile(t, path, "PRAGMA journal_mode = wal;"+schemaV1+`;
		ATTACH DATABASE '`+src+`' AS v2;
		INSERT INTO runs SELECT seq, id, ensemble, responses, profiles, options, started_at, saved_at, completion_reason, base, snapshot FROM v2.runs;
		INSERT INTO turns SELECT run, turn, records, counts, context, edges, memory, pending, saved_at FROM v2.turns;
		INSERT INTO warnings SELECT * FROM v2.warnings;
		DETACH DATABASE v2`)

	db, err = store.Open(path, false, "")
	if err != nil {
		t.Fatal(err)
	}
	runs, err := db.Runs()
	if err != nil || len(runs) != 2 {
		t.Fatalf("runs %v, %v", runs, err)
	}
	for _, ri := range runs {
		f, err := db.Load(ri)
		if err != nil {
			t.Fatal(err)
		}
		if got := withoutClock(t, f.State); got != want[ri.ID] {
			t.Fatalf("run %s loaded\n%s\nwant\n%s", ri.ID, got, want[ri.ID])
		}
		if ri.Turns != f.State.TurnCount {
			t.Errorf("run %s listed with %d turns, holds %d", ri.ID, ri.Turns, f.State.TurnCount)
		}
	}
	// The run cut short goes on, in the new layout, to the end.
	cut := runs[1]
	if err := db.Lock(cut); err != nil {
		t.Fatal(err)
	}
	f, err := db.Load(cut)
	if err != nil {
		t.Fatal(err)
	}
	var w *store.Writer
	r := engine.Resume(e, f.State, engine.Options{Runner: testRunner(), AfterTurn: func(st *state.State) error { return w.SaveTurn(st) }})
	if w, err = db.Continue(cut, f, stateKey(e)); err != nil {
		t.Fatal(err)
	}
	res := r.Run(context.Background())
	if err := w.Finish(r.State(), res.CompletionReason, nil); err != nil {
		t.Fatal(err)
	}
	w.Close()
	db.Close()

	db, err = store.Open(path, false, "")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	runs, _ = db.Runs()
	f, err = db.Load(runs[1])
	if err != nil {
		t.Fatal(err)
	}
	if got := withoutClock(t, f.State); got != want["done"] {
		t.Errorf("the resumed run ends\n%s\nwant, as the run never cut short\n%s", got, want["done"])
	}
	if v := sqliteInt(t, path, "PRAGMA user_version"); v != 4 {
		t.Fatalf("user_version %d, want 4", v)
	}
	if keyed := sqliteInt(t, path, "SELECT count(*) FROM turns WHERE key = (run << 32) | turn"); keyed != runs[0].Turns+runs[1].Turns {
		t.Errorf("%d turns keyed by run << 32 | turn, want %d", keyed, runs[0].Turns+runs[1].Turns)
	}
}
