package serve

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ensemble-run/ensemble/agent"
	"github.com/ensemble-run/ensemble/ensemble"
	"github.com/ensemble-run/ensemble/state"
)

func testJournal(t *testing.T) *journal {
	t.Helper()
	j, err := openJournal(filepath.Join(t.TempDir(), "s.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { j.close() })
	return j
}

// onDisk is what events.log holds.
func onDisk(t *testing.T, j *journal) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(j.dir, "events.log"))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func ev(n int) []byte { return fmt.Appendf(nil, `{"n":%d}`, n) }

// A new run's events wait in memory until something is saved (flush) or
// someone reads them; a reader gets only events that are on disk, and
// once it read, each later event is written, and wakes it, as it comes.
func TestJournalEventsWaitUntilSavedOrRead(t *testing.T) {
	t.Parallel()
	j := testJournal(t)
	l := j.log("r1")
	l.add("r1", ev(1), true)
	l.add("r1", ev(2), true)
	if got := onDisk(t, j); got != "" {
		t.Fatalf("written before any save or read: %q", got)
	}
	j.flush()
	if got, want := onDisk(t, j), "r1\t1\t{\"n\":1}\nr1\t2\t{\"n\":2}\n"; got != want {
		t.Fatalf("after a save:\n%q\nwant\n%q", got, want)
	}
	l.add("r1", ev(3), true)
	evs, first, more := l.after(1)
	if first != 2 || len(evs) != 2 || string(evs[1]) != `{"n":3}` {
		t.Fatalf("after(1): first %d, %q", first, evs)
	}
	if !strings.HasSuffix(onDisk(t, j), "r1\t3\t{\"n\":3}\n") {
		t.Fatalf("read before it was written:\n%q", onDisk(t, j))
	}
	l.add("r1", ev(4), true) // watched now: at once
	select {
	case <-more:
	default:
		t.Fatal("the reader was not woken")
	}
	if !strings.HasSuffix(onDisk(t, j), "r1\t4\t{\"n\":4}\n") {
		t.Fatalf("not written at once for a reader:\n%q", onDisk(t, j))
	}
	// What was written is what a restart reads, at the same places.
	j2, err := openJournal(strings.TrimSuffix(j.dir, ".serve"))
	if err != nil {
		t.Fatal(err)
	}
	defer j2.close()
	evs2, _, _ := j2.log("r1").after(0)
	evs, _, _ = l.after(0)
	if len(evs2) != 4 || !bytes.Equal(bytes.Join(evs2, nil), bytes.Join(evs, nil)) {
		t.Fatalf("read again: %q, in memory %q", evs2, evs)
	}
}

// Events of several runs that wait are written in one go, in the order
// they came, each at the place its span says; a log that was dropped
// (its run ended) reads them back from the file.
func TestJournalInterleavedRuns(t *testing.T) {
	t.Parallel()
	j := testJournal(t)
	a, b := j.log("a"), j.log("b")
	for i := 1; i <= 3; i++ {
		a.add("a", ev(i), true)
		b.add("b", ev(10+i), true)
	}
	j.drop("a") // loads from events.log when read: written first
	evs, _, _ := a.after(0)
	if got := string(bytes.Join(evs, []byte(","))); got != `{"n":1},{"n":2},{"n":3}` {
		t.Fatalf("a: %s", got)
	}
	j.drop("b")
	evs, _, _ = b.after(0)
	if got := string(bytes.Join(evs, []byte(","))); got != `{"n":11},{"n":12},{"n":13}` {
		t.Fatalf("b: %s", got)
	}
}

// A write that fails loses the events that waited, as a failed write
// always lost its event: each log is cut back to what is on disk, and the
// next event takes the first lost number.
func TestJournalFailedWrite(t *testing.T) {
	t.Parallel()
	j := testJournal(t)
	a, b := j.log("a"), j.log("b")
	a.add("a", ev(1), false)
	a.add("a", ev(2), true)
	b.add("b", ev(3), true)
	good := j.f
	bad, err := os.Open(filepath.Join(j.dir, "events.log")) // read only: writes fail
	if err != nil {
		t.Fatal(err)
	}
	defer bad.Close()
	j.f = bad
	if err := j.flush(); err == nil {
		t.Fatal("a write to a read-only file succeeded")
	}
	j.f = good
	a.add("a", ev(4), false)
	b.add("b", ev(5), false)
	if got, want := onDisk(t, j), "a\t1\t{\"n\":1}\na\t2\t{\"n\":4}\nb\t1\t{\"n\":5}\n"; got != want {
		t.Fatalf("on disk:\n%q\nwant\n%q", got, want)
	}
	for _, c := range []struct {
		l    *eventLog
		want string
	}{{a, `{"n":1},{"n":4}`}, {b, `{"n":5}`}} {
		evs, _, _ := c.l.after(0)
		if got := string(bytes.Join(evs, []byte(","))); got != c.want {
			t.Errorf("in memory %s, want %s", got, c.want)
		}
	}
}

// recordingSaver notes what events.log held when each save began.
type recordingSaver struct {
	j    *journal
	seen []string
}

func (s *recordingSaver) note(what string) {
	b, _ := os.ReadFile(filepath.Join(s.j.dir, "events.log"))
	s.seen = append(s.seen, fmt.Sprintf("%s:%d", what, bytes.Count(b, []byte{'\n'})))
}
func (s *recordingSaver) Begin(*ensemble.Ensemble, *state.File) error { s.note("begin"); return nil }
func (s *recordingSaver) Wrap(r agent.Runner) agent.Runner            { return r }
func (s *recordingSaver) AfterTurn(*state.State) error                { s.note("turn"); return nil }
func (s *recordingSaver) Finish(*state.State, string, *state.Stopped) error {
	s.note("finish")
	return nil
}
func (s *recordingSaver) Abandon() {}

// Every save of a new run (journaled) comes after the events before it
// are in events.log: no state is committed ahead of its events.
func TestJournaledSavesWriteEventsFirst(t *testing.T) {
	t.Parallel()
	j := testJournal(t)
	rec := &recordingSaver{j: j}
	l := j.log("r")
	s := journaled{rec, j, l}
	l.add("r", ev(1), true)
	s.Begin(nil, nil)
	l.add("r", ev(2), true)
	l.add("r", ev(3), true)
	s.AfterTurn(nil)
	l.add("r", ev(4), true)
	s.Finish(nil, "completed", nil)
	if got, want := strings.Join(rec.seen, " "), "begin:1 turn:3 finish:4"; got != want {
		t.Fatalf("events on disk at each save: %s, want %s", got, want)
	}
	// Another run's events are written by its own saves, not this one's.
	j.log("other").add("other", ev(5), true)
	s.AfterTurn(nil)
	if got := strings.Join(rec.seen, " "); !strings.HasSuffix(got, "finish:4 turn:4") {
		t.Fatalf("events on disk at each save: %s", got)
	}
}
