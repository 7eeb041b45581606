package store_test

import (
	"errors"
	"path/filepath"
	"testing"

	"github.com/ensemble-run/ensemble/store"
)

// A batch is kept beside the runs: its spec, its lines by input, its
// status; one process at a time runs it.
func TestBatches(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "runs.db")
	db, err := store.Open(path, true, store.SyncNormal)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if bs, err := db.Batches(); err != nil || len(bs) != 0 {
		t.Fatalf("a new database: %v, %v", bs, err)
	}
	b, err := db.CreateBatch("nightly", []byte(`{"k": 1}`))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.CreateBatch("nightly", []byte(`{}`)); !errors.Is(err, store.ErrBatchExists) {
		t.Error("a second batch with the same id was made")
	}
	for idx, line := range map[int]string{2: "two\n", 0: "zero\n"} {
		if err := db.SaveBatchLine(b, idx, []byte(line), []byte(`{"m": 1}`)); err != nil {
			t.Fatal(err)
		}
	}
	if err := db.SaveBatchLine(b, 2, []byte("TWO\n"), []byte(`{}`)); err != nil {
		t.Fatal(err)
	}
	lines, err := db.BatchLines(b)
	if err != nil || len(lines) != 2 || string(lines[0].Line) != "zero\n" || string(lines[2].Line) != "TWO\n" || string(lines[0].Meta) != `{"m": 1}` {
		t.Fatalf("lines %v, %v", lines, err)
	}

	// Another process (another open database) cannot run it.
	other, err := store.Open(path, false, store.SyncNormal)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	bs, err := other.Batches()
	if err != nil || len(bs) != 1 || bs[0].ID != "nightly" || string(bs[0].Spec) != `{"k": 1}` || bs[0].Lines != 2 || bs[0].Status != "" {
		t.Fatalf("batches %+v, %v", bs, err)
	}
	if err := other.LockBatch(bs[0]); !errors.Is(err, store.ErrLocked) {
		t.Errorf("locking a batch another process runs: %v", err)
	}
	if err := db.FinishBatch(b, "done"); err != nil {
		t.Fatal(err)
	}
	if bs, _ := other.Batches(); bs[0].Status != "done" {
		t.Errorf("status %q", bs[0].Status)
	}
	// The database's runs are not changed by its batches.
	if runs, err := other.Runs(); err != nil || len(runs) != 0 {
		t.Errorf("runs %v, %v", runs, err)
	}
}
