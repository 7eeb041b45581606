package store_test

import (
	"context"
	"database/sql/driver"
	"fmt"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/ensemble-run/ensemble/conditions"
	"github.com/ensemble-run/ensemble/engine"
	"github.com/ensemble-run/ensemble/ensemble"
	"github.com/ensemble-run/ensemble/events"
	scriptkind "github.com/ensemble-run/ensemble/kinds/script"
	"github.com/ensemble-run/ensemble/runners"
	"github.com/ensemble-run/ensemble/state"
	"github.com/ensemble-run/ensemble/store"
	sqlite "modernc.org/sqlite"
)

// A run whose turns are saved in the background goes on through the turns
// injected responses answer while its database cannot be written, but an
// agent they do not answer (here the last, "check") starts only once every
// turn before it is in the database: a kill then could not make it run
// twice.
func TestNothingRunsAheadOfItsDatabase(t *testing.T) {
	t.Parallel()
	const loop = 30
	dep := func(name, cond string, required bool) *ensemble.Dependency {
		d := &ensemble.Dependency{AgentName: name, RequiresAll: required}
		if cond != "" {
			p, err := conditions.Compile(cond)
			if err != nil {
				t.Fatal(err)
			}
			d.Condition, d.Program = cond, p
		}
		return d
	}
	ag := func(name string, maxTurns int, deps ...*ensemble.Dependency) *ensemble.Agent {
		return &ensemble.Agent{Name: name, Kind: scriptkind.Kind{}, Dependencies: deps, Conversation: ensemble.Conversation{MaxTurns: maxTurns}}
	}
	e := &ensemble.Ensemble{Name: "ahead", Path: "/nowhere/ahead.yaml", Hash: fmt.Sprintf("%064x", 2),
		Agents: []*ensemble.Agent{
			ag("seed", 1),
			ag("ping", loop, dep("seed", "", true), dep("pong", "", false)),
			ag("pong", loop, dep("ping", "", true)),
			ag("check", 1, dep("pong", fmt.Sprintf("executions.pong == %d", loop), true)),
		}}
	e.Limits.MaxTotalTurns = 100
	e.Index()
	responses := runners.NewResponses()
	responses.Add("seed", "go")
	for i := 1; i <= loop; i++ {
		responses.Add("ping", float64(i))
		responses.Add("pong", float64(i))
	}
	checkTurn := 2 + 2*loop

	path := filepath.Join(t.TempDir(), "ahead.db")
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

	var (
		w     *store.Writer
		saved = -1 // the turns in the database when check started
		mu    sync.Mutex
	)
	check := runners.RunnerFunc(func(ctx context.Context, req *runners.Request) *runners.Result {
		info, err := reader.Run("ahead")
		if err != nil {
			return &runners.Result{Err: err}
		}
		mu.Lock()
		saved = info.Turns
		mu.Unlock()
		return &runners.Result{Output: "checked"}
	})
	beforeCheck := make(chan struct{})
	r := engine.New(e, "go", engine.Options{
		Runner:    runners.WaitBefore(runners.Injected(responses, check), func() error { return w.Wait() }),
		AfterTurn: func(st *state.State) error { return w.SaveTurn(st) },
		Events: func(ev events.Event) {
			if ev.Type == events.TurnCompleted && ev.Turn == checkTurn-1 {
				close(beforeCheck)
			}
		},
	})
	if w, err = db.Create("ahead", r.File(""), stateKey(e)); err != nil {
		t.Fatal(err)
	}
	w.Background()

	// Another connection holds the database's write lock until the run has
	// played every injected turn, and a while after.
	other, err := (&sqlite.Driver{}).Open("file:" + path)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	exec := func(q string) {
		if _, err := other.(driver.ExecerContext).ExecContext(context.Background(), q, nil); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	exec("BEGIN IMMEDIATE")
	done := make(chan *engine.Result)
	go func() { done <- r.Run(context.Background()) }()
	select {
	case <-beforeCheck:
	case res := <-done:
		exec("COMMIT")
		w.Close()
		t.Fatalf("the run ended (%s) after %d turns, before turn %d: %+v", res.CompletionReason, r.State().TurnCount, checkTurn, res.Errors)
	}
	time.Sleep(20 * time.Millisecond) // time for check to run, were it not held back
	mu.Lock()
	early := saved
	mu.Unlock()
	exec("COMMIT")
	res := <-done
	if err := w.Finish(r.State(), res.CompletionReason); err != nil {
		t.Fatal(err)
	}
	w.Close()
	if early != -1 {
		t.Fatalf("check ran while the database was locked, with %d turns saved", early)
	}
	if res.CompletionReason != engine.Completed || r.State().TurnCount != checkTurn || saved != checkTurn-1 {
		t.Fatalf("%s after %d turns; check ran with %d turns saved, want %d", res.CompletionReason, r.State().TurnCount, saved, checkTurn-1)
	}
}
