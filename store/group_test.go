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

// Shared writers (CreateShared) hold the database's lock themselves, only
// around their statements: runs on goroutines of their own save without
// their caller holding it, and wait for whoever holds it.
func TestSharedWritersHoldTheLockThemselves(t *testing.T) {
	t.Parallel()
	db, err := Open(filepath.Join(t.TempDir(), "shared.db"), true, "")
	if err != nil {
		t.Fatal(err)
	}
	db.GroupCommit(false)
	const runs, turns = 8, 5
	errs := make(chan error, runs)
	db.Hold() // held until every run waits on it
	started := make(chan struct{}, runs)
	for i := range runs {
		go func() {
			started <- struct{}{}
			st := state.New("go")
			f := &state.File{Ensemble: state.FileRef{Name: "g", Path: "/g.yaml", SHA256: fmt.Sprintf("%064x", 1)}, State: st}
			w, err := db.CreateShared(fmt.Sprintf("run%d", i), f, func(s string) string { return s })
			if err != nil {
				errs <- err
				return
			}
			for n := 1; n <= turns; n++ {
				turn(st, n)
				if err := w.SaveTurn(st); err != nil {
					errs <- err
					return
				}
			}
			err = w.Finish(st, "completed", nil)
			if cerr := w.Close(); err == nil {
				err = cerr
			}
			errs <- err
		}()
	}
	for range runs {
		<-started
	}
	select {
	case err := <-errs:
		t.Fatalf("a run went on while the lock was held: %v", err)
	default:
	}
	db.Release()
	for range runs {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	db.Hold()
	defer db.Release()
	infos, err := db.Runs()
	if err != nil {
		t.Fatal(err)
	}
	if len(infos) != runs {
		t.Fatalf("%d runs saved, want %d", len(infos), runs)
	}
	for _, r := range infos {
		f, err := db.Load(r)
		if err != nil {
			t.Fatal(err)
		}
		if r.CompletionReason != "completed" || f.State.TurnCount != turns || len(f.State.History()) != turns {
			t.Errorf("%s: %q, %d turns, %d records", r.ID, r.CompletionReason, f.State.TurnCount, len(f.State.History()))
		}
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
}
