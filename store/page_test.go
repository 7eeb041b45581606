package store_test

import (
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ensemble-run/ensemble/engine"
	"github.com/ensemble-run/ensemble/state"
	"github.com/ensemble-run/ensemble/store"
)

// pageRuns is a database written by the real writer, for what an
// inspector reads of it: a run played to its end ("first"), a fork of it
// from turn forkTurn played to its end ("fork": its rows up to there
// copied), a run that started from the state of "first" at that turn
// ("based": its first turns are in its first state, not rows; what
// `state import` of a state file writes), and a run cut after the first
// turn that left a request pending ("cut", unfinished, its writer gone).
type pageRuns struct {
	db                      *store.DB
	first, fork, based, cut *store.RunInfo
	firstH, forkH, basedH   []*state.Record // their histories, as a load reads them
	cutPending              []state.AgentRequest
	cutTurn, forkTurn       int
}

const forkTurn = 3

func newPageRuns(t *testing.T) *pageRuns {
	t.Helper()
	db, err := store.Open(filepath.Join(t.TempDir(), "page.db"), true, "")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	p := &pageRuns{db: db, forkTurn: forkTurn}
	savedRun(t, db, "first")
	p.first = run(t, db, "first")

	// The fork goes on from its copied turns to its end; the based run
	// from the same state, a new run.
	if _, err := db.Fork(p.first, forkTurn, "fork"); err != nil {
		t.Fatal(err)
	}
	e := testEnsemble(t)
	for _, id := range []string{"fork", "based"} {
		var f *state.File
		if id == "fork" {
			f, err = db.Load(run(t, db, "fork"))
		} else {
			f, err = db.LoadAt(p.first, forkTurn)
		}
		if err != nil {
			t.Fatal(err)
		}
		var w *store.Writer
		rest := engine.FromFile(e, f, engine.Options{Runner: testRunner(),
			AfterTurn: func(st *state.State) error { return w.SaveTurn(st) }})
		if id == "fork" {
			w, err = db.Continue(run(t, db, "fork"), rest.File(""), stateKey(e))
		} else {
			w, err = db.Create(id, rest.File(""), stateKey(e))
		}
		if err != nil {
			t.Fatal(err)
		}
		res := rest.Run(context.Background())
		if err := w.Finish(rest.State(), res.CompletionReason, nil); err != nil {
			t.Fatal(err)
		}
		w.Close()
	}

	// The cut run stops after the first turn that leaves a request.
	r := engine.New(e, "go", engine.Options{Runner: testRunner()})
	cw, err := db.Create("cut", r.File(""), stateKey(e))
	if err != nil {
		t.Fatal(err)
	}
	for len(r.State().Pending()) == 0 {
		if reason := r.Step(context.Background()); reason != "" {
			t.Fatalf("the run ended (%s) before a request was pending", reason)
		}
		if err := cw.SaveTurn(r.State()); err != nil {
			t.Fatal(err)
		}
	}
	if err := cw.Wait(); err != nil {
		t.Fatal(err)
	}
	cw.Close()
	p.cutPending, p.cutTurn = r.State().Pending(), r.State().TurnCount

	p.first, p.fork, p.based, p.cut = run(t, db, "first"), run(t, db, "fork"), run(t, db, "based"), run(t, db, "cut")
	p.firstH, p.forkH, p.basedH = history(t, db, p.first), history(t, db, p.fork), history(t, db, p.based)
	return p
}

func run(t *testing.T, db *store.DB, id string) *store.RunInfo {
	t.Helper()
	info, err := db.Run(id)
	if err != nil {
		t.Fatal(err)
	}
	return info
}

func history(t *testing.T, db *store.DB, info *store.RunInfo) []*state.Record {
	t.Helper()
	f, err := db.Load(info)
	if err != nil {
		t.Fatal(err)
	}
	return f.State.History()
}

// byTurn are the records of hist grouped by turn, as JSON: turn → records.
func byTurn(t *testing.T, hist []*state.Record) map[int]string {
	t.Helper()
	groups := map[int][]*state.Record{}
	for _, r := range hist {
		groups[r.TurnNumber] = append(groups[r.TurnNumber], r)
	}
	out := map[int]string{}
	for turn, recs := range groups {
		out[turn] = jsonOf(t, recs)
	}
	return out
}

func jsonOf(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// A page of turns is the turns after `after`, at most limit, in order,
// each with its records as the run's history holds them, from either end
// of the run, across a fork's copied rows and its own, and across the
// turns of a run's first state (which have no saved time) and its rows.
func TestTurnsPage(t *testing.T) {
	t.Parallel()
	p := newPageRuns(t)
	last := p.first.Turns
	if last < 6 || p.fork.Turns < forkTurn+2 {
		t.Fatalf("the runs are too short: %d and %d turns", last, p.fork.Turns)
	}
	for _, tc := range []struct {
		name         string
		run          *store.RunInfo
		hist         []*state.Record
		after, limit int
		want         []int
	}{
		{"the first page", p.first, p.firstH, 0, 2, []int{1, 2}},
		{"a middle page", p.first, p.firstH, 2, 3, []int{3, 4, 5}},
		{"the last page", p.first, p.firstH, last - 2, 50, []int{last - 1, last}},
		{"after the end", p.first, p.firstH, last, 50, nil},
		{"no limit", p.first, p.firstH, 0, 0, nil},
		{"a fork's copied turns", p.fork, p.forkH, 0, 2, []int{1, 2}},
		{"across a fork's turn", p.fork, p.forkH, 1, 4, []int{2, 3, 4, 5}},
		{"a first state's turns", p.based, p.basedH, 0, 2, []int{1, 2}},
		{"across a first state's end", p.based, p.basedH, 1, 4, []int{2, 3, 4, 5}},
		{"after a first state", p.based, p.basedH, forkTurn, 2, []int{forkTurn + 1, forkTurn + 2}},
		{"a first state's last turn", p.based, p.basedH, forkTurn - 1, 1, []int{forkTurn}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// not parallel: the cases share one DB, which runs one statement at a time
			turns, err := p.db.Turns(tc.run, tc.after, tc.limit)
			if err != nil {
				t.Fatal(err)
			}
			want := byTurn(t, tc.hist)
			var got []int
			for _, tu := range turns {
				got = append(got, tu.Turn)
				if g := jsonOf(t, tu.Records); g != want[tu.Turn] {
					t.Errorf("turn %d: records\n%s\nwant\n%s", tu.Turn, g, want[tu.Turn])
				}
				copied := tc.run == p.based && tu.Turn <= forkTurn
				if tu.Saved.IsZero() != copied {
					t.Errorf("turn %d: saved at %v (a copied turn: %v)", tu.Turn, tu.Saved, copied)
				}
			}
			if !equal(got, tc.want) {
				t.Errorf("turns after %d, at most %d: %v, want %v", tc.after, tc.limit, got, tc.want)
			}
		})
	}
}

func equal(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// Every execution of a run reads back as its record, found by its turn or
// looked for; a skip by its turn; what the run does not hold is
// ErrNoExecution.
func TestExecutionPage(t *testing.T) {
	t.Parallel()
	p := newPageRuns(t)
	skips, found := 0, 0
	for _, rc := range []struct {
		run  *store.RunInfo
		hist []*state.Record
	}{{p.first, p.firstH}, {p.fork, p.forkH}, {p.based, p.basedH}} {
		for _, r := range rc.hist {
			turns := []int{r.TurnNumber}
			if r.Skipped {
				skips++
			} else {
				turns = append(turns, 0) // looked for
			}
			for _, turn := range turns {
				got, err := p.db.Execution(rc.run, r.AgentName, r.Execution, turn)
				if err != nil {
					t.Fatalf("%s: %s#%d (turn %d): %v", rc.run.ID, r.AgentName, r.Execution, turn, err)
				}
				if g, w := jsonOf(t, got), jsonOf(t, r); g != w {
					t.Errorf("%s: %s#%d (turn %d):\n%s\nwant\n%s", rc.run.ID, r.AgentName, r.Execution, turn, g, w)
				}
				found++
			}
		}
	}
	if skips == 0 || found < len(p.firstH)+len(p.forkH)+len(p.basedH) {
		t.Fatalf("the runs cover %d skips, %d reads: want some of each", skips, found)
	}
	for _, tc := range []struct {
		name  string
		agent string
		n     int
		turn  int
	}{
		{"an agent the run has not", "nobody", 1, 0},
		{"an execution after its last", "writer", 99, 0},
		{"an execution in another turn", "seed", 1, 2},
		{"a name that only begins an agent's", "write", 1, 0},
		// Keys are the run's seq above 32 bits of turn: these would be
		// the next run's (the fork's) turn 1 and 2.
		{"a turn past 32 bits", "seed", 1, 1<<32 + 1},
		{"a turn past 32 bits, again", "writer", 1, 1<<32 + 2},
	} {
		if _, err := p.db.Execution(p.first, tc.agent, tc.n, tc.turn); !errors.Is(err, store.ErrNoExecution) {
			t.Errorf("%s: %v, want ErrNoExecution", tc.name, err)
		}
	}
}

// The totals of a run are what its records add up to, per agent and in
// all, counted whole or from a turn on (what was added since).
func TestTallyTurns(t *testing.T) {
	t.Parallel()
	p := newPageRuns(t)
	want := func(hist []*state.Record, after int) store.Tally {
		w := store.Tally{Agents: map[string]*store.AgentTally{}}
		for _, r := range hist {
			if r.TurnNumber <= after {
				continue
			}
			a := w.Agents[r.AgentName]
			if a == nil {
				a = &store.AgentTally{}
				w.Agents[r.AgentName] = a
			}
			switch {
			case r.Skipped:
				a.Skips++
				a.Last = "skipped"
			case r.Error != nil:
				a.Executions++
				a.Failures++
				a.Last = "failed"
			default:
				a.Executions++
				a.Last = "ok"
			}
			a.LastTurn = r.TurnNumber
			a.Seconds += r.ExecutionTime
			if r.Usage != nil {
				a.Usage.Add(r.Usage)
				w.Usage.Add(r.Usage)
			}
			w.Turn = max(w.Turn, r.TurnNumber)
		}
		return w
	}
	for _, tc := range []struct {
		name  string
		run   *store.RunInfo
		hist  []*state.Record
		after int
	}{
		{"a whole run", p.first, p.firstH, 0},
		{"from a turn on", p.first, p.firstH, 4},
		{"a whole fork", p.fork, p.forkH, 0},
		{"a fork from within its copied turns", p.fork, p.forkH, 1},
		{"a fork from its turn", p.fork, p.forkH, forkTurn},
		{"a run from its first state", p.based, p.basedH, 0},
		{"a run from within its first state", p.based, p.basedH, 1},
		{"a run from its first state's end", p.based, p.basedH, forkTurn},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// not parallel: the cases share one DB, which runs one statement at a time
			got := store.Tally{Turn: tc.after}
			if err := p.db.TallyTurns(tc.run, &got); err != nil {
				t.Fatal(err)
			}
			w := want(tc.hist, tc.after)
			if g, w := jsonOf(t, got), jsonOf(t, w); g != w {
				t.Errorf("tally after turn %d:\n%s\nwant\n%s", tc.after, g, w)
			}
			if got.Turn != tc.run.Turns {
				t.Errorf("counted to turn %d, want %d", got.Turn, tc.run.Turns)
			}
		})
	}
	// Counting again from where it stopped adds nothing.
	whole := store.Tally{}
	if err := p.db.TallyTurns(p.first, &whole); err != nil {
		t.Fatal(err)
	}
	again := jsonOf(t, whole)
	if err := p.db.TallyTurns(p.first, &whole); err != nil || jsonOf(t, whole) != again {
		t.Errorf("a second count changed the totals (%v):\n%s\nwas\n%s", err, jsonOf(t, whole), again)
	}
	if whole.Agents["flaky"] == nil || whole.Agents["flaky"].Failures == 0 || whole.Usage.Requests == 0 {
		t.Errorf("the run covers no failure or no usage: %s", again)
	}
}

// A run's head is its row and what its last turn left pending; a fork's
// parent is in its row.
func TestHead(t *testing.T) {
	t.Parallel()
	p := newPageRuns(t)
	for _, tc := range []struct {
		name    string
		run     *store.RunInfo
		reason  string
		base    int
		pending []state.AgentRequest
	}{
		{"a finished run", p.first, engine.Completed, 0, nil},
		{"a fork", p.fork, engine.Completed, 0, nil},
		{"a run from a state", p.based, engine.Completed, forkTurn, nil},
		{"a run cut with a request pending", p.cut, "", 0, p.cutPending},
	} {
		h, err := p.db.Head(tc.run)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if h.Input != "go" || h.Ensemble.Path != "/nowhere/store.yaml" || h.CompletionReason != tc.reason || h.Base != tc.base {
			t.Errorf("%s: head %+v, want input go, reason %q, base %d", tc.name, h, tc.reason, tc.base)
		}
		if g, w := jsonOf(t, h.Pending), jsonOf(t, tc.pending); g != w {
			t.Errorf("%s: pending %s, want %s", tc.name, g, w)
		}
	}
	if len(p.cutPending) == 0 || p.cut.Turns != p.cutTurn {
		t.Fatalf("the cut run: %d turns, pending %v", p.cut.Turns, p.cutPending)
	}
	if p.fork.Parent != "first" || p.fork.ParentTurn != forkTurn || p.first.Parent != "" || p.based.Parent != "" {
		t.Errorf("parents: the fork's %q at %d, the run's %q, the based run's %q", p.fork.Parent, p.fork.ParentTurn, p.first.Parent, p.based.Parent)
	}
	// The fork's copied turns are the run's.
	turns, err := p.db.Turns(p.fork, 0, forkTurn)
	if err != nil {
		t.Fatal(err)
	}
	want := byTurn(t, p.firstH)
	for _, tu := range turns {
		if g := jsonOf(t, tu.Records); g != want[tu.Turn] {
			t.Errorf("the fork's turn %d is not the run's:\n%s\nwant\n%s", tu.Turn, g, want[tu.Turn])
		}
	}
}

// Writing says whether a run's writer holds it, from another connection,
// and leaves the run free when it is.
func TestWriting(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "lock.db")
	db, err := store.Open(path, true, "")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	reader, err := store.Open(path, false, "")
	if err != nil {
		t.Fatal(err)
	}
	defer reader.Close()
	e := testEnsemble(t)
	r := engine.New(e, "go", engine.Options{Runner: testRunner()})
	w, err := db.Create("live", r.File(""), stateKey(e))
	if err != nil {
		t.Fatal(err)
	}
	info := run(t, reader, "live")
	if !reader.Writing(info) {
		t.Error("a run its writer holds: not writing")
	}
	w.Close()
	for range 2 { // the probe itself leaves it free
		if reader.Writing(info) {
			t.Error("a run no writer holds: writing")
		}
	}
	if err := reader.Lock(info); err != nil {
		t.Errorf("after the probes, the run cannot be locked: %v", err)
	}
	reader.Unlock(info)
}

// An agent's memory after a turn is what its runner kept then; a turn
// that did not change it has none.
func TestMemoryAt(t *testing.T) {
	t.Parallel()
	p := newPageRuns(t)
	for _, r := range p.firstH {
		if r.Skipped || r.Error != nil {
			continue
		}
		mem, err := p.db.MemoryAt(p.first, r.TurnNumber, r.AgentName)
		if err != nil {
			t.Fatal(err)
		}
		var lines []string
		if err := json.Unmarshal(mem, &lines); err != nil || len(lines) == 0 || !strings.HasPrefix(lines[len(lines)-1], "turn "+itoa(r.TurnNumber)+" saw") {
			t.Errorf("%s after turn %d: memory %s (%v)", r.AgentName, r.TurnNumber, mem, err)
		}
	}
	if mem, err := p.db.MemoryAt(p.first, 1, "publisher"); err != nil || mem != nil {
		t.Errorf("an agent that did not run in the turn: %s, %v", mem, err)
	}
	if mem, err := p.db.MemoryAt(p.first, 1<<32+1, "seed"); err != nil || mem != nil {
		t.Errorf("a turn past 32 bits (the next run's turn 1): %s, %v", mem, err)
	}
}

func itoa(n int) string { b, _ := json.Marshal(n); return string(b) }
