package store_test

import (
	"database/sql"
	"path/filepath"
	"strings"
	"testing"

	_ "modernc.org/sqlite"

	"github.com/ensemble-run/ensemble/store"
)

// An SQLite database that is not a state database (here, one with no
// tables) is refused when a run is to be read from it, never given the
// schema of one; with create (run --state), it becomes one.
func TestForeignEmptyDatabaseIsRefused(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "other.db")
	raw, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := raw.Exec(`PRAGMA journal_mode = wal; CREATE TABLE x (a); DROP TABLE x;`); err != nil {
		t.Fatal(err)
	}
	raw.Close()
	if _, err := store.Open(path, false, ""); err == nil || !strings.Contains(err.Error(), "not an ensemble state database") {
		t.Fatalf("Open of an SQLite file with no tables: %v", err)
	}
	db, err := store.Open(path, true, "")
	if err != nil {
		t.Fatalf("Open with create: %v", err)
	}
	db.Close()
}
