package store

import (
	"context"
	"database/sql/driver"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	sqlite "modernc.org/sqlite"

	"github.com/ensemble-run/ensemble/state"
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
	t.Cleanup(func() { w.Close() })
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
	st.CountExecution("a")
	st.SetOutput("a", "a", float64(n))
	st.AppendRecord(&state.Record{TurnNumber: n, AgentName: "a", Execution: n, OutputData: float64(n), Timestamp: time.Now().UTC()})
	st.TurnCount = n
}

// until waits until cond, read under b's lock, holds, and fails the test
// if it does not within 30 s (what says what was awaited): far longer than
// any of these waits takes on a loaded machine, so no timing is tested.
func until(t *testing.T, b *behind, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		b.mu.Lock()
		ok := cond()
		b.mu.Unlock()
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("after 30 s, still waiting until %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

func execOn(t *testing.T, c driver.Conn, q string) {
	t.Helper()
	if _, err := c.(driver.ExecerContext).ExecContext(context.Background(), q, nil); err != nil {
		t.Fatalf("%s: %v", q, err)
	}
}

// rowInTheWay puts, through c, a row of turns where the run's turn n goes:
// the writer's insert of turn n then fails.
func rowInTheWay(t *testing.T, c driver.Conn, n int) {
	t.Helper()
	execOn(t, c, fmt.Sprintf("INSERT INTO turns (key, run, turn, records, counts, saved_at) SELECT (seq << 32) | %d, seq, %d, '[]', '{}', '' FROM runs", n, n))
}

// wantTurns checks the turns of the database, read through c.
func wantTurns(t *testing.T, c driver.Conn, want string) {
	t.Helper()
	if got := fmt.Sprint(turnsOn(t, c)); got != want {
		t.Errorf("turns in the database: %s, want %s", got, want)
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
	wantTurns(t, other, "[1 2 3 4 5 6 7 8 9 10]")
	if err := w.Finish(st, "completed", nil); err != nil {
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
	if f.State.TurnCount != 10 || f.State.Context()["a"] != float64(10) || f.CompletionReason != "completed" {
		t.Errorf("loaded: turn %d, a = %v, %q", f.State.TurnCount, f.State.Context()["a"], f.CompletionReason)
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
	rowInTheWay(t, other, 3)
	save(3)
	b := w.bg.Load()
	until(t, b, "the writer takes turn 3 from its queue", func() bool { return len(b.queued) == 0 })
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
	if err2 := w.Finish(st, "completed", nil); err2 == nil || err2.Error() != err.Error() {
		t.Errorf("Finish after a failed turn: %v", err2)
	}
	wantTurns(t, other, "[1 2 3]") // 3: the row in the way
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
	if w.bg.Load() != nil || db.behind != nil {
		t.Error("the writer is still in the background")
	}
	wantTurns(t, other, "[1 2 3 4 5]")
}

// A run is at most 2×behindRows turns ahead of its database: SaveTurn
// waits while the writer holds behindRows turns queued and as many being
// written.
func TestAtMostTwiceBehindRowsAhead(t *testing.T) {
	t.Parallel()
	_, w, st, other := behindRun(t)
	b := w.bg.Load()
	ahead := func() int {
		b.mu.Lock()
		defer b.mu.Unlock()
		return b.handed - b.done
	}
	execOn(t, other, "BEGIN IMMEDIATE")
	turns := 3 * behindRows
	saved := make(chan int, turns)
	go func() {
		for n := 1; n <= turns; n++ {
			turn(st, n)
			if err := w.SaveTurn(st); err != nil {
				t.Error(err)
			}
			saved <- ahead()
		}
		close(saved)
	}()
	// The writer waits for the lock with its first batch; the run fills
	// the queue behind it, then waits.
	until(t, b, "the queue behind the writer is full", func() bool { return b.full })
	most := ahead()
	execOn(t, other, "COMMIT")
	for a := range saved {
		most = max(most, a)
	}
	if most > 2*behindRows || most < behindRows {
		t.Errorf("the run went %d turns ahead of its database, want at most %d", most, 2*behindRows)
	}
	if err := w.Wait(); err != nil {
		t.Fatal(err)
	}
	if got := len(turnsOn(t, other)); got != turns {
		t.Errorf("%d turns saved, want %d", got, turns)
	}
}

// One writer of a database writes in the background (they would share its
// connection): another one's Background does nothing, and it writes on
// its caller's goroutine, beside the first.
func TestOneWriterInTheBackgroundPerDatabase(t *testing.T) {
	t.Parallel()
	db, w, st, other := behindRun(t)
	st2 := state.New("go")
	w2, err := db.Create("second", &state.File{Ensemble: state.FileRef{Name: "behind", Path: "/behind.yaml", SHA256: fmt.Sprintf("%064x", 1)}, State: st2},
		func(s string) string { return s })
	if err != nil {
		t.Fatal(err)
	}
	w2.Background()
	if w2.bg.Load() != nil || db.behind != w {
		t.Fatal("a second writer of the database went to the background")
	}
	turn(st, 1)
	turn(st2, 1)
	if err := w.SaveTurn(st); err != nil {
		t.Fatal(err)
	}
	if err := w.Wait(); err != nil { // the connection is the first writer's until then
		t.Fatal(err)
	}
	if err := w2.SaveTurn(st2); err != nil {
		t.Fatal(err)
	}
	for _, f := range []func() error{w.Close, w2.Close} {
		if err := f(); err != nil {
			t.Fatal(err)
		}
	}
	wantTurns(t, other, "[1 1]")
}

// A run waiting for room behind a write that fails gets the failure: the
// turn it was saving is not queued, and it goes no further.
func TestWaitingForRoomEndsWithTheFailure(t *testing.T) {
	t.Parallel()
	_, w, st, other := behindRun(t)
	b := w.bg.Load()
	// Another connection holds the write lock, with a row in the way of
	// turn 1.
	execOn(t, other, "BEGIN IMMEDIATE")
	rowInTheWay(t, other, 1)
	failedAt := make(chan int, 1)
	var failure error
	go func() {
		for n := 1; ; n++ {
			turn(st, n)
			if failure = w.SaveTurn(st); failure != nil {
				failedAt <- n
				return
			}
		}
	}()
	until(t, b, "the queue behind the writer is full", func() bool { return b.full })
	execOn(t, other, "COMMIT")
	var n int
	select {
	case n = <-failedAt:
	case <-time.After(30 * time.Second):
		t.Fatal("the run waiting for room never got the failure")
	}
	if failure == nil || !strings.Contains(failure.Error(), "saving turn 1: ") {
		t.Fatalf("turn %d: %v", n, failure)
	}
	if n > 2*behindRows+1 {
		t.Errorf("the run saved %d turns after a failed one", n-2)
	}
	wantTurns(t, other, "[1]") // the row in the way
}

// A damaged row of turns is reported with its turn and what is wrong in
// it, whichever of the chunk's rows it is and whether a later turn
// overwrote its context value or not.
func TestDamagedTurnRowsAreNamed(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ name, update, want string }{
		{"records not JSON", "UPDATE turns SET records = 'not json' WHERE turn = 3", "corrupt: turn 3: records: "},
		{"a null record", "UPDATE turns SET records = '[null]' WHERE turn = 4", "corrupt: turn 4: a history record is null"},
		{"counts not JSON", "UPDATE turns SET counts = '{' WHERE turn = 2", "corrupt: turn 2: counts: "},
		{"the last context value out of range", `UPDATE turns SET context = '[["a", 1e400]]' WHERE turn = 5`, `corrupt: turn 5: context: "a": `},
		{"a context key not a string", `UPDATE turns SET context = '[[1, 2]]' WHERE turn = 1`, "corrupt: turn 1: context: "},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			db, w, st, other := behindRun(t)
			for n := 1; n <= 5; n++ {
				turn(st, n)
				if err := w.SaveTurn(st); err != nil {
					t.Fatal(err)
				}
			}
			if err := w.Finish(st, "completed", nil); err != nil {
				t.Fatal(err)
			}
			execOn(t, other, tc.update)
			info, err := db.Run("behind")
			if err != nil {
				t.Fatal(err)
			}
			_, err = db.Load(info)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Load: %v, want %q", err, tc.want)
			}
		})
	}
}
