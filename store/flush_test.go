package store

import (
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/ensemble-run/ensemble/state"
)

// A run's WAL is flushed in the background every flushEvery turns, and
// closing the database ends the flusher; with synchronous=FULL, where
// every commit is flushed by SQLite, there is no flusher.
func TestWALFlushedInBackground(t *testing.T) {
	t.Parallel()
	for _, sync := range []Sync{SyncNormal, SyncFull} {
		t.Run(string(sync), func(t *testing.T) {
			t.Parallel()
			db, err := Open(filepath.Join(t.TempDir(), "flush.db"), true, sync)
			if err != nil {
				t.Fatal(err)
			}
			st := state.New("go")
			f := &state.File{Ensemble: state.FileRef{Name: "flush", Path: "/flush.yaml", SHA256: fmt.Sprintf("%064x", 1)}, State: st}
			w, err := db.Create("flush", f, func(s string) string { return s })
			if err != nil {
				t.Fatal(err)
			}
			for turn := 1; turn <= 2*flushEvery+1; turn++ {
				st.CountExecution("a")
				st.AppendRecord(&state.Record{TurnNumber: turn, AgentName: "a", Execution: turn, Timestamp: time.Now().UTC()})
				st.TurnCount = turn
				if err := w.SaveTurn(st); err != nil {
					t.Fatal(err)
				}
			}
			fl := db.flush
			w.Close()
			if err := db.Close(); err != nil {
				t.Fatal(err)
			}
			if fl != nil {
				select {
				case <-fl.done:
				default:
					t.Error("the flusher outlived Close")
				}
			}
			switch {
			case sync == SyncFull && fl != nil:
				t.Error("synchronous=FULL started a flusher")
			case sync == SyncNormal && fl == nil:
				t.Fatal("no flusher after 257 turns")
			case sync == SyncNormal && fl.n == 0:
				t.Error("the WAL was never flushed")
			}
		})
	}
}

// A flusher whose file is missing makes no flush, and stops.
func TestFlusherOfMissingFile(t *testing.T) {
	t.Parallel()
	fl := newFlusher(filepath.Join(t.TempDir(), "none-wal"))
	fl.poke()
	fl.poke()
	fl.stop()
	if fl.n != 0 {
		t.Errorf("%d flushes of a missing file", fl.n)
	}
}
