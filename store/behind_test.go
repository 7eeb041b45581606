package store

import (
	"context"
	"database/sql/driver"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ensemble-run/ensemble/state"
	sqlite "modernc.org/sqlite"
)

// behindRun is a new run of a database in a new file, with its writer in
// the background, and a connection of its own to the file.
func behindRun(t *testing.T) (*DB, *Writer, *state.State, driver.Conn) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "behind.db")
	db, err := Open(path, true, "")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	st := state.New("go")
	f := &state.File{Ensemble: state.FileRef{Name: "behind", Path: "/behind.yaml", SHA256: fmt.Sprintf("%064x", 1)}, State: st}
	w, err := db.Create("behind", f, func(s string) string { return s })
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(w.Close)
	w.Background()
	other, err := (&sqlite.Driver{}).Open("file:" + path + "?_pragma=busy_timeout(10000)")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { other.Close() })
	return db, w, st, other
}

// turn plays turn on st: agent a ran and output its turn number.
func turn(st *state.State, n int) {
	st.AgentExecutionCount["a"]++
	st.OutputCount["a"]++
	st.AccumulatedContext["a"] = float64(n)
	st.AppendRecord(&state.Record{TurnNumber: n, AgentName: "a", Execution: n, OutputData: float64(n), Timestamp: time.Now().UTC()})
	st.TurnCount = n
}

func execOn(t *testing.T, c driver.Conn, q string) {
	t.Helper()
	if _, err := c.(driver.ExecerContext).ExecContext(context.Background(), q, nil); err != nil {
		t.Fatalf("%s: %v", q, err)
	}
}

func turnsOn(t *testing.T, c driver.Conn) []int64 {
	t.Helper()
	rows, err := c.(driver.QueryerContext).QueryContext(context.Background(), "SELECT turn FROM turns ORDER BY key", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []int64
	v := make([]driver.Value, 1)
	for rows.Next(v) == nil {
		out = append(out, v[0].(int64))
	}
	return out
}

// Turns that come while the writer waits for the database are written
// together, in one transaction, and in order; a turn that comes alone is
// written alone.
func TestTurnsBehindAreWrittenTogether(t *testing.T) {
	t.Parallel()
	db, w, st, other := behindRun(t)
	turn(st, 1)
	if err := w.SaveTurn(st); err != nil {
		t.Fatal(err)
	}
	if err := w.Wait(); err != nil {
		t.Fatal(err)
	}
	if db.commits != 1 {
		t.Fatalf("turn 1 alone: %d commits", db.commits)
	}
	// Another connection holds the write lock: the writer waits for it
	// (SQLite's busy timeout) while nine more turns are saved.
	execOn(t, other, "BEGIN IMMEDIATE")
	for n := 2; n <= 10; n++ {
		turn(st, n)
		if err := w.SaveTurn(st); err != nil {
			t.Fatal(err)
		}
	}
	if got := turnsOn(t, other); len(got) != 1 {
		t.Fatalf("turns saved while the database was locked: %v", got)
	}
	execOn(t, other, "COMMIT")
	if err := w.Wait(); err != nil {
		t.Fatal(err)
	}
	// Turn 2 may have been taken alone before the others came.
	if db.commits > 3 {
		t.Errorf("nine turns behind took %d transactions", db.commits-1)
	}
	if got := fmt.Sprint(turnsOn(t, other)); got != "[1 2 3 4 5 6 7 8 9 10]" {
		t.Errorf("turns saved: %s", got)
	}
	if err := w.Finish(st, "completed"); err != nil {
		t.Fatal(err)
	}
	info, err := db.Run("behind")
	if err != nil {
		t.Fatal(err)
	}
	f, err := db.Load(info)
	if err != nil {
		t.Fatal(err)
	}
	if f.State.TurnCount != 10 || f.State.AccumulatedContext["a"] != float64(10) || f.CompletionReason != "completed" {
		t.Errorf("loaded: turn %d, a = %v, %q", f.State.TurnCount, f.State.AccumulatedContext["a"], f.CompletionReason)
	}
}

// A turn that cannot be written stops the writer: no later turn is written
// after it, not even those queued already, and SaveTurn, Wait and Finish
// say which turn was lost.
func TestFailedWriteBehindStopsTheWrites(t *testing.T) {
	t.Parallel()
	_, w, st, other := behindRun(t)
	save := func(n int) {
		t.Helper()
		turn(st, n)
		if err := w.SaveTurn(st); err != nil {
			t.Fatalf("turn %d: %v", n, err)
		}
	}
	for n := 1; n <= 2; n++ {
		save(n)
		if err := w.Wait(); err != nil {
			t.Fatalf("turn %d: %v", n, err)
		}
	}
	// Another connection holds the write lock and puts a row in the way of
	// turn 3, which the writer takes and waits to write, while turns 4
	// and 5 are queued behind it.
	execOn(t, other, "BEGIN IMMEDIATE")
	execOn(t, other, "INSERT INTO turns (key, run, turn, records, counts, saved_at) SELECT (seq << 32) | 3, seq, 3, '[]', '{}', '' FROM runs")
	save(3)
	for taken := false; !taken; {
		w.bg.mu.Lock()
		taken = len(w.bg.queued) == 0
		w.bg.mu.Unlock()
		time.Sleep(time.Millisecond)
	}
	save(4)
	save(5)
	execOn(t, other, "COMMIT")
	err := w.Wait()
	if err == nil || !strings.Contains(err.Error(), "saving turn 3") || !strings.Contains(err.Error(), "behind.db") {
		t.Fatalf("Wait after a failed turn: %v", err)
	}
	turn(st, 6)
	if err2 := w.SaveTurn(st); err2 == nil || err2.Error() != err.Error() {
		t.Errorf("SaveTurn after a failed turn: %v", err2)
	}
	if err2 := w.Finish(st, "completed"); err2 == nil || err2.Error() != err.Error() {
		t.Errorf("Finish after a failed turn: %v", err2)
	}
	if got := fmt.Sprint(turnsOn(t, other)); got != "[1 2 3]" { // 3: the row in the way
		t.Errorf("turns in the database: %s", got)
	}
}

// Closing the database with a writer still in the background writes what
// it holds, then closes.
func TestCloseWritesWhatIsBehind(t *testing.T) {
	t.Parallel()
	db, w, st, other := behindRun(t)
	execOn(t, other, "BEGIN IMMEDIATE")
	for n := 1; n <= 5; n++ {
		turn(st, n)
		if err := w.SaveTurn(st); err != nil {
			t.Fatal(err)
		}
	}
	execOn(t, other, "COMMIT")
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	if w.bg != nil {
		t.Error("the writer is still in the background")
	}
	if got := fmt.Sprint(turnsOn(t, other)); got != "[1 2 3 4 5]" {
		t.Errorf("turns in the database: %s", got)
	}
}
