package benchdata_test

import (
	"context"
	"testing"

	"github.com/ensemble-run/ensemble/internal/benchdata"
	"github.com/ensemble-run/ensemble/store"
)

// A saved loop is a completed run of 2×turns+1 turns in its database, each
// execution a record of it.
func TestSaveLoop(t *testing.T) {
	t.Parallel()
	s, err := benchdata.SaveLoop(context.Background(), t.TempDir(), 5, 3)
	if err != nil {
		t.Fatal(err)
	}
	if s.Reason != "completed" || s.Turns != benchdata.LoopTurns(5) {
		t.Fatalf("saved %+v, want completed after %d turns", s, benchdata.LoopTurns(5))
	}
	db, err := store.Open(s.DB, false, store.SyncNormal)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	runs, err := db.Runs()
	if err != nil {
		t.Fatal(err)
	}
	if len(runs) != 1 || runs[0].ID != s.ID {
		t.Fatalf("database lists %+v, want the one run %s", runs, s.ID)
	}
}
