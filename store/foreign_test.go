package store_test

import (
	"bytes"
	"database/sql"
	"os"
	"path/filepath"
	"runtime"
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
	sqliteFile(t, path, `PRAGMA journal_mode = wal; CREATE TABLE x (a); DROP TABLE x;`)
	if _, err := store.Open(path, false, ""); err == nil || !strings.Contains(err.Error(), "not an ensemble state database") {
		t.Fatalf("Open of an SQLite file with no tables: %v", err)
	}
	db, err := store.Open(path, true, "")
	if err != nil {
		t.Fatalf("Open with create: %v", err)
	}
	db.Close()
}

// Another program's SQLite database is refused, with create or without,
// and left exactly as it was: not turned to WAL mode, no -wal or -shm
// beside it.
func TestForeignDatabaseIsLeftAsItWas(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "notes.db")
	sqliteFile(t, path, `CREATE TABLE notes (x); INSERT INTO notes VALUES ('kept')`)
	before, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, create := range []bool{false, true} {
		if _, err := store.Open(path, create, ""); err == nil || !strings.Contains(err.Error(), "not an ensemble state database") {
			t.Fatalf("Open (create %t) of another program's database: %v", create, err)
		}
	}
	after, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(before, after) {
		t.Error("the file was changed")
	}
	for _, suffix := range []string{"-wal", "-shm", "-journal"} {
		if _, err := os.Stat(path + suffix); err == nil {
			t.Errorf("%s left beside it", suffix)
		}
	}
}

// An Open that fails after SQLite opened the file closes all it opened: its
// statements, then the connection (which SQLite cannot free while they are
// open, and whose open files then stayed).
func TestFailedOpenLeavesNothingOpen(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("counts the open files in /proc/self/fd")
	}
	// Not parallel: it counts the process's open files.
	path := filepath.Join(t.TempDir(), "notes.db")
	sqliteFile(t, path, `CREATE TABLE notes (x)`)
	open := func() int {
		fds, err := os.ReadDir("/proc/self/fd")
		if err != nil {
			t.Fatal(err)
		}
		return len(fds)
	}
	before := open()
	for range 10 {
		if _, err := store.Open(path, false, ""); err == nil {
			t.Fatal("another program's database was opened")
		}
	}
	if n := open(); n != before {
		t.Errorf("%d files open after 10 failed Opens, %d before", n, before)
	}
}

// sqliteFile makes the SQLite database path, as another program would,
// with the statements given.
func sqliteFile(t *testing.T, path, statements string) {
	t.Helper()
	raw, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	if _, err := raw.Exec(statements); err != nil {
		t.Fatal(err)
	}
}

// sqliteInt is the integer the query reads from the SQLite database path.
func sqliteInt(t *testing.T, path, query string) int {
	t.Helper()
	raw, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	var n int
	if err := raw.QueryRow(query).Scan(&n); err != nil {
		t.Fatalf("%s: %v", query, err)
	}
	return n
}

// A state database is in WAL mode from its creation, and one that lost it
// (turned to another journal mode by hand) has it again once opened.
func TestStateDatabaseIsInWALMode(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "runs.db")
	mode := func() string {
		t.Helper()
		raw, err := sql.Open("sqlite", path)
		if err != nil {
			t.Fatal(err)
		}
		defer raw.Close()
		var m string
		if err := raw.QueryRow(`PRAGMA journal_mode`).Scan(&m); err != nil {
			t.Fatal(err)
		}
		return m
	}
	db, err := store.Open(path, true, "")
	if err != nil {
		t.Fatal(err)
	}
	db.Close()
	if m := mode(); m != "wal" {
		t.Fatalf("a new state database is in %s mode", m)
	}
	sqliteFile(t, path, `PRAGMA journal_mode = DELETE`)
	if m := mode(); m != "delete" {
		t.Fatalf("setting it by hand: %s", m)
	}
	if db, err = store.Open(path, false, ""); err != nil {
		t.Fatal(err)
	}
	db.Close()
	if m := mode(); m != "wal" {
		t.Errorf("opened again, the state database is in %s mode", m)
	}
}
