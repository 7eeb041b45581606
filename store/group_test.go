package store

import (
	"fmt"
	"path/filepath"
	"testing"

	sqlite "modernc.org/sqlite"

	"github.com/ensemble-run/ensemble/state"
)

// The runs of a database that commits them together: their turns are
// written without a commit each, seen from another connection only once
// the group commits (its timer, Flush or Synced), and a commit is shared.
func TestGroupCommit(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "group.db")
	db, err := Open(path, true, "")
	if err != nil {
		t.Fatal(err)
	}
	db.GroupCommit(false)
	other, err := (&sqlite.Driver{}).Open("file:" + path + "?_pragma=busy_timeout(10000)")
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	var writers []*Writer
	var states []*state.State
	db.Hold()
	commits := db.commits
	for i := range 3 {
		st := state.New("go")
		f := &state.File{Ensemble: state.FileRef{Name: "g", Path: "/g.yaml", SHA256: fmt.Sprintf("%064x", 1)}, State: st}
		w, err := db.Create(fmt.Sprintf("run%d", i), f, func(s string) string { return s })
		if err != nil {
			t.Fatal(err)
		}
		w.Background() // nothing: the group takes the turns
		writers, states = append(writers, w), append(states, st)
	}
	for n := 1; n <= 4; n++ {
		for i, w := range writers {
			turn(states[i], n)
			if err := w.SaveTurn(states[i]); err != nil {
				t.Fatal(err)
			}
		}
	}
	if w := writers[0]; w.bg.Load() != nil || db.commits != commits {
		t.Fatalf("a writer in the background, or %d commits", db.commits-commits)
	}
	if got := turnsOn(t, other); len(got) != 0 {
		t.Fatalf("another connection sees %v before the commit", got)
	}
	if err := db.Synced(); err != nil { // the timer's commit, awaited
		t.Fatal(err)
	}
	if got := turnsOn(t, other); len(got) != 12 || db.commits != commits+1 {
		t.Fatalf("after the commit: %v, %d commits", got, db.commits-commits)
	}
	// a failing write leaves nothing of itself, and the others stand
	if err := db.write(0, func() error { return db.exec(`INSERT INTO runs (id) VALUES ('broken')`) }); err == nil {
		t.Fatal("a write against the schema succeeded")
	}
	// nor does one statement written without a savepoint
	if err := db.write1(0, func() error { return db.exec(`INSERT INTO runs (id) VALUES ('broken')`) }); err == nil || !statementOnly(err) {
		t.Fatalf("a statement against the schema: %v", err)
	}
	turn(states[0], 5)
	if err := writers[0].SaveTurn(states[0]); err != nil {
		t.Fatal(err)
	}
	if err := db.Flush(); err != nil {
		t.Fatal(err)
	}
	if got := turnsOn(t, other); len(got) != 13 {
		t.Fatalf("after a failed write: %v", got)
	}
	for _, w := range writers {
		w.Close()
	}
	db.Release()
	db.Hold()
	defer db.Release()
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
}
