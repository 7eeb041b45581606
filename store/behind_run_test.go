package store_test

import (
	"context"
	"database/sql/driver"
	"fmt"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	sqlite "modernc.org/sqlite"

	"github.com/ensemble-run/ensemble/agent"
	"github.com/ensemble-run/ensemble/engine"
	"github.com/ensemble-run/ensemble/ensemble"
	"github.com/ensemble-run/ensemble/events"
	"github.com/ensemble-run/ensemble/internal/barrier"
	"github.com/ensemble-run/ensemble/internal/responses"
	"github.com/ensemble-run/ensemble/state"
	"github.com/ensemble-run/ensemble/store"
)

// aheadRun is a durable run wired as run --state wires it: saved in the
// background, its runner behind a barrier. Its ensemble is seed, then
// first (a loop of ping and pong, loop turns each), then last; the agents
// named in outside are run by the test's runner, outside, the others
// answered by injected responses. Turn numbers: seed 1, the loop 2 to
// 2*loop+1 (or 3 to 2*loop+2 after first), last the one after.
type aheadRun struct {
	r     *engine.Run
	w     *store.Writer
	db    *store.DB
	other driver.Conn // another connection to the database
	// completed is the last turn completed.
	completed atomic.Int64
}

func newAheadRun(t *testing.T, loop int, first bool, outside agent.RunnerFunc, outsideAgents ...string) *aheadRun {
	t.Helper()
	dep := func(name, cond string, required bool) *ensemble.Dependency {
		return dependency(t, name, cond, required)
	}
	ag := scriptAgent
	agents := []*ensemble.Agent{ag("seed", 1)}
	before := "seed"
	if first {
		agents = append(agents, ag("first", 1, dep("seed", "", true)))
		before = "first"
	}
	agents = append(agents,
		ag("ping", loop, dep(before, "", true), dep("pong", "", false)),
		ag("pong", loop, dep("ping", "", true)),
		ag("last", 1, dep("pong", fmt.Sprintf("executions.pong == %d", loop), true)))
	e := &ensemble.Ensemble{Name: "ahead", Path: "/nowhere/ahead.yaml", Hash: fmt.Sprintf("%064x", 2), Agents: agents}
	e.Limits.MaxTotalTurns = 2*loop + 10
	e.Index()
	resp := responses.NewResponses()
	injected := func(agent string) bool {
		for _, a := range outsideAgents {
			if a == agent {
				return false
			}
		}
		return true
	}
	for _, a := range []string{"seed", "first", "last"} {
		if injected(a) {
			resp.Add(a, a)
		}
	}
	for i := 1; i <= loop; i++ {
		resp.Add("ping", float64(i))
		resp.Add("pong", float64(i))
	}

	path := filepath.Join(t.TempDir(), "ahead.db")
	db, err := store.Open(path, true, "")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	other, err := (&sqlite.Driver{}).Open("file:" + path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { other.Close() })
	a := &aheadRun{db: db, other: other}
	barrier := &barrier.Barrier{Wait: func() error { return a.w.Wait() }}
	a.r = engine.New(e, "go", engine.Options{
		Runner:    barrier.Wrap(responses.Injected(resp, outside)),
		AfterTurn: barrier.AfterTurn(func(st *state.State) error { return a.w.SaveTurn(st) }),
		Events: func(ev events.Event) {
			if ev.Type == events.TurnCompleted {
				a.completed.Store(int64(ev.Turn))
			}
		},
	})
	if a.w, err = db.Create("ahead", a.r.File(""), stateKey(e)); err != nil {
		t.Fatal(err)
	}
	a.w.Background()
	return a
}

// exec runs q on the other connection.
func (a *aheadRun) exec(t *testing.T, q string) {
	t.Helper()
	if _, err := a.other.(driver.ExecerContext).ExecContext(context.Background(), q, nil); err != nil {
		t.Errorf("%s: %v", q, err)
	}
}

// saved is the turns of the run in the database.
func (a *aheadRun) saved(t *testing.T) int {
	t.Helper()
	info, err := a.db.Run("ahead")
	if err != nil {
		t.Fatal(err)
	}
	return info.Turns
}

// finish waits for the run started in done, writes its end, and checks it
// completed after turns turns.
func (a *aheadRun) finish(t *testing.T, done <-chan *engine.Result, turns int) {
	t.Helper()
	res := <-done
	if err := a.w.Finish(a.r.State(), res.CompletionReason, nil); err != nil {
		t.Fatal(err)
	}
	a.w.Close()
	if res.CompletionReason != engine.Completed || a.r.State().TurnCount != turns {
		t.Fatalf("%s after %d turns, want completed after %d: %+v", res.CompletionReason, a.r.State().TurnCount, turns, res.Errors)
	}
}

// A run whose turns are saved in the background goes on through the turns
// injected responses answer while its database cannot be written, but an
// agent they do not answer (here last) starts only once every turn before
// it is in the database: a kill then could not make it run twice.
func TestNothingRunsAheadOfItsDatabase(t *testing.T) {
	t.Parallel()
	const loop = 15 // 31 turns before last: within what the writer holds
	var a *aheadRun
	savedAtLast := make(chan int, 1)
	a = newAheadRun(t, loop, false, func(ctx context.Context, req *agent.Request) *agent.Result {
		info, err := a.db.Run("ahead")
		if err != nil {
			return &agent.Result{Err: err}
		}
		savedAtLast <- info.Turns
		return &agent.Result{Output: "checked"}
	}, "last")
	lastTurn := 2*loop + 2

	// Another connection holds the database's write lock until the run has
	// played every injected turn, and a while after.
	a.exec(t, "BEGIN IMMEDIATE")
	done := make(chan *engine.Result, 1)
	go func() { done <- a.r.Run(context.Background()) }()
	for a.completed.Load() < int64(lastTurn-1) {
		select {
		case res := <-done:
			a.exec(t, "COMMIT")
			t.Fatalf("the run ended (%s) after %d turns, before turn %d", res.CompletionReason, a.r.State().TurnCount, lastTurn)
		case <-time.After(time.Millisecond):
		}
	}
	time.Sleep(20 * time.Millisecond) // time for last to run, were it not held back
	select {
	case n := <-savedAtLast:
		a.exec(t, "COMMIT")
		t.Fatalf("last ran while the database was locked, with %d turns saved", n)
	default:
	}
	a.exec(t, "COMMIT")
	a.finish(t, done, lastTurn)
	if n := <-savedAtLast; n != lastTurn-1 {
		t.Fatalf("last ran with %d turns saved, want %d", n, lastTurn-1)
	}
}

// A turn that ran an agent injected responses do not answer (here first)
// is in the database before the next turn starts: a kill then could not
// make it run again after the turns that followed it.
func TestATurnThatReachedOutsideIsSavedBeforeTheNext(t *testing.T) {
	t.Parallel()
	const loop = 20
	var a *aheadRun
	ran := make(chan struct{})
	a = newAheadRun(t, loop, true, func(ctx context.Context, req *agent.Request) *agent.Result {
		// Another connection takes the database's write lock as first
		// ends: its turn cannot be written until it lets go.
		a.exec(t, "BEGIN IMMEDIATE")
		close(ran)
		return &agent.Result{Output: "outside"}
	}, "first")
	done := make(chan *engine.Result, 1)
	go func() { done <- a.r.Run(context.Background()) }()
	<-ran
	for a.completed.Load() < 2 {
		time.Sleep(time.Millisecond)
	}
	time.Sleep(20 * time.Millisecond) // time for the turns after first to run, were they not held back
	got := a.completed.Load()
	a.exec(t, "COMMIT")
	a.finish(t, done, 2*loop+3)
	if got != 2 {
		t.Fatalf("turn %d completed while first's turn, 2, was not saved", got)
	}
	if n := a.saved(t); n != 2*loop+3 {
		t.Fatalf("%d turns saved", n)
	}
}
