package store_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/ensemble-run/ensemble/agent"
	"github.com/ensemble-run/ensemble/engine"
	"github.com/ensemble-run/ensemble/ensemble"
	"github.com/ensemble-run/ensemble/internal/conditions"
	"github.com/ensemble-run/ensemble/internal/opaque"
	scriptkind "github.com/ensemble-run/ensemble/kinds/script"
	"github.com/ensemble-run/ensemble/state"
	"github.com/ensemble-run/ensemble/store"
)

// testEnsemble exercises what a turn can change: a writer/reviewer loop
// behind a condition, agent requests (pending between turns), memory, a
// failing agent, a condition that fails at run time (a warning), two agents
// in one turn and an agent with a state key of its own.
func testEnsemble(t testing.TB) *ensemble.Ensemble {
	dep := func(name, cond string, required bool) *ensemble.Dependency {
		return dependency(t, name, cond, required)
	}
	ag := scriptAgent
	reviewer := ag("reviewer", 5, dep("writer", "", true))
	reviewer.Conversation.TriggersConversation = true
	reviewer.Conversation.StateKey = "review"
	// A guard that skips from the writer's second output on, and a skip
	// that propagates (docs/semantics.md#guards-that-skip).
	guarded := ag("guarded", 5, dep("writer", "", true))
	guarded.When = "executions.writer < 2"
	guarded.WhenProgram = dependency(t, "x", guarded.When, true).Program
	e := &ensemble.Ensemble{Name: "store-test", Path: "/nowhere/store.yaml", Hash: fmt.Sprintf("%064x", 1),
		Agents: []*ensemble.Agent{
			ag("seed", 1),
			ag("writer", 5, dep("seed", "", true), dep("reviewer", "context.review?.approved != true", false)),
			reviewer,
			ag("helper", 2, dep("seed", "context.seed.missing.field == 1", true)),
			ag("flaky", 2, dep("writer", "", true)),
			ag("publisher", 1, dep("reviewer", "context.review.approved == true", true)),
			guarded,
			ag("after", 5, dep("guarded", "", true)),
		}}
	e.Index()
	return e
}

// dependency is a dependency on the agent name, with the condition cond
// (none when "").
func dependency(t testing.TB, name, cond string, required bool) *ensemble.Dependency {
	t.Helper()
	d := &ensemble.Dependency{AgentName: name, RequiresAll: required}
	if cond != "" {
		p, err := conditions.Compile(cond)
		if err != nil {
			t.Fatal(err)
		}
		d.Condition, d.Program = cond, opaque.Make[ensemble.CompiledCondition](p)
	}
	return d
}

// scriptAgent is a script agent (which the tests' runners play) of at most
// maxTurns executions.
func scriptAgent(name string, maxTurns int, deps ...*ensemble.Dependency) *ensemble.Agent {
	return &ensemble.Agent{Name: name, Kind: scriptkind.Kind{}, Dependencies: deps,
		Conversation: ensemble.Conversation{MaxTurns: maxTurns}}
}

func testRunner() agent.Runner {
	return agent.RunnerFunc(func(ctx context.Context, req *agent.Request) *agent.Result {
		var mem []string
		if req.Memory != nil {
			if err := json.Unmarshal(req.Memory, &mem); err != nil {
				return &agent.Result{Err: fmt.Errorf("memory: %v", err)}
			}
		}
		mem = append(mem, fmt.Sprintf("turn %d saw %v", req.Turn, req.Fresh))
		memJSON, _ := json.Marshal(mem)
		res := &agent.Result{InputData: map[string]any{"dependencies": req.Dependencies, "request": req.RequestParameters},
			Memory: memJSON, Usage: &state.Usage{Requests: 1, InputTokens: req.Turn, OutputTokens: req.Execution}}
		out := map[string]any{"by": req.Agent.Name, "execution": req.Execution, "remembers": len(mem)}
		switch req.Agent.Name {
		case "reviewer":
			out["approved"] = req.Execution >= 3
			if req.Execution == 2 {
				out["agent_requests"] = []any{map[string]any{"target_agent_name": "helper", "parameters": map[string]any{"why": "check"}}}
			}
		case "flaky":
			if req.Execution == 1 {
				res.Err = errors.New("flaky failed")
				return res
			}
		}
		res.Output = out
		return res
	})
}

func stateKey(e *ensemble.Ensemble) func(string) string {
	return func(name string) string {
		if a := e.Agent(name); a != nil {
			return a.StateKey()
		}
		return name
	}
}

// asJSON is a state as a state file holds it: what a resumed run reads.
func asJSON(t testing.TB, st *state.State) string {
	t.Helper()
	b, err := json.Marshal(st)
	if err != nil {
		t.Fatal(err)
	}
	var v any
	json.Unmarshal(b, &v)
	b, _ = json.MarshalIndent(v, "", " ")
	return string(b)
}

// withoutClock is a state as JSON without what depends on the clock.
func withoutClock(t testing.TB, st *state.State) string {
	t.Helper()
	var m map[string]any
	json.Unmarshal([]byte(asJSON(t, st)), &m)
	history, _ := m["conversation_history"].([]any) // none before the first turn
	for _, r := range history {
		delete(r.(map[string]any), "execution_time")
		delete(r.(map[string]any), "timestamp")
	}
	b, _ := json.MarshalIndent(m, "", " ")
	return string(b)
}

// After every turn, the run loaded from the database is the run in memory:
// the per-turn rows carry everything a turn changes. Then a second run in
// the same database, and the runs list.
func TestEveryTurnRoundTrips(t *testing.T) {
	t.Parallel()
	e := testEnsemble(t)
	path := filepath.Join(t.TempDir(), "runs.db")
	db, err := store.Open(path, true, "")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	r := roundTrip(t, e, db, "first", false)
	if st := r.State(); st.Skips("guarded") == 0 || st.Skips("after") == 0 || st.Executions("guarded") == 0 {
		t.Fatalf("guarded: %d executions, %d skips; after: %d skips", st.Executions("guarded"), st.Skips("guarded"), st.Skips("after"))
	}

	// A run loaded from the database goes on to the same end.
	half := engine.New(e, "go", engine.Options{Runner: testRunner(), MaxTurns: 3})
	w2, err := db.Create("second", half.File(""), stateKey(e))
	if err != nil {
		t.Fatal(err)
	}
	half.Run(context.Background())
	// Only the turns' rows, then a finish without reason change.
	for _, err := range []error{w2.SaveTurn(half.State()), w2.Finish(half.State(), engine.MaxTotalTurns, nil)} {
		if err != nil {
			t.Fatal(err)
		}
	}
	w2.Close()
	info, err := db.Run("second")
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Lock(info); err != nil {
		t.Fatal(err)
	}
	f, err := db.Load(info)
	if err != nil {
		t.Fatal(err)
	}
	var w3 *store.Writer
	rest := engine.FromFile(e, f, engine.Options{Runner: testRunner(), MaxTurns: 50,
		AfterTurn: func(st *state.State) error { return w3.SaveTurn(st) }})
	w3, err = db.Continue(info, rest.File(""), stateKey(e))
	if err != nil {
		t.Fatal(err)
	}
	res := rest.Run(context.Background())
	if err := w3.Finish(rest.State(), res.CompletionReason, nil); err != nil {
		t.Fatal(err)
	}
	w3.Close()
	if got, want := withoutClock(t, rest.State()), withoutClock(t, r.State()); got != want {
		t.Fatalf("the resumed run ends\n%s\nwant\n%s", got, want)
	}

	runs, err := db.Runs()
	if err != nil {
		t.Fatal(err)
	}
	if len(runs) != 2 || runs[0].ID != "first" || runs[1].ID != "second" || runs[1].Turns != r.State().TurnCount ||
		runs[1].CompletionReason != engine.Completed || runs[0].Ensemble != "store-test" {
		t.Fatalf("runs: %+v %+v", runs[0], runs[1])
	}
	if _, err := db.Run("third"); !errors.Is(err, store.ErrNoRun) {
		t.Fatalf("an unknown run: %v", err)
	}
}

// One writer per run: a second writer of the same run, in another
// process or through another open of the database, is refused while the
// first holds it; another run of the database is not. An unfinished run's
// id cannot be taken by a new run; a finished run's can.
func TestOneWriterPerRun(t *testing.T) {
	t.Parallel()
	e := testEnsemble(t)
	path := filepath.Join(t.TempDir(), "runs.db")
	a, err := store.Open(path, true, "")
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	b, err := store.Open(path, false, "")
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	file := func() *state.File { return engine.New(e, "go", engine.Options{Runner: testRunner()}).File("") }
	w, err := a.Create("one", file(), stateKey(e))
	if err != nil {
		t.Fatal(err)
	}
	info, err := b.Run("one")
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Lock(info); !errors.Is(err, store.ErrLocked) || !strings.Contains(err.Error(), "another ensemble process") {
		t.Fatalf("a second writer: %v", err)
	}
	var exists *store.ExistsError
	if _, err := b.Create("one", file(), stateKey(e)); !errors.Is(err, store.ErrLocked) {
		t.Fatalf("a new run with the id of a locked one: %v", err)
	}
	w2, err := b.Create("two", file(), stateKey(e))
	if err != nil {
		t.Fatalf("another run of the same database: %v", err)
	}
	w.Close()
	if _, err := b.Create("one", file(), stateKey(e)); !errors.As(err, &exists) {
		t.Fatalf("a new run with the id of an unfinished one: %v", err)
	}
	if err := w2.Finish(file().State, engine.Completed, nil); err != nil {
		t.Fatal(err)
	}
	w2.Close()
	w3, err := a.Create("two", file(), stateKey(e))
	if err != nil {
		t.Fatalf("a new run with the id of a finished one: %v", err)
	}
	w3.Close()
	if runs, _ := a.Runs(); len(runs) != 2 || runs[1].CompletionReason != "" {
		t.Fatalf("runs %+v", runs)
	}
}

// A damaged database is an error naming the file, never a panic or a
// silent empty run.
func TestDamagedDatabase(t *testing.T) {
	t.Parallel()
	e := testEnsemble(t)
	dir := t.TempDir()
	good := filepath.Join(dir, "good.db")
	db, err := store.Open(good, true, "")
	if err != nil {
		t.Fatal(err)
	}
	var w *store.Writer
	r := engine.New(e, "go", engine.Options{Runner: testRunner(), AfterTurn: func(st *state.State) error { return w.SaveTurn(st) }})
	w, err = db.Create("run", r.File(""), stateKey(e))
	if err != nil {
		t.Fatal(err)
	}
	res := r.Run(context.Background())
	w.Finish(r.State(), res.CompletionReason, nil)
	w.Close()
	db.Close()
	data, err := os.ReadFile(good)
	if err != nil {
		t.Fatal(err)
	}
	garbage := append([]byte(nil), data...)
	for i := 100; i < len(garbage); i += 7 {
		garbage[i] ^= 0x5a
	}
	for _, tc := range []struct {
		name string
		data []byte
		msg  string
	}{
		{"truncated", data[:len(data)/2], "corrupt or truncated"},
		{"last bytes cut", data[:len(data)-100], "corrupt or truncated"},
		{"last page cut", data[:len(data)-4096], "corrupt or truncated"},
		{"garbage", garbage, "corrupt or truncated"},
		{"header only", []byte(store.Header), "corrupt or truncated"},
		{"not sqlite", []byte("hello"), "not an SQLite database"},
		{"page bytes reserved", withByte(data, 20, 255), "corrupt or truncated (database disk image is malformed: its header reserves 255 bytes"},
		{"write version 5", withByte(data, 18, 5), "corrupt or truncated (database disk image is malformed: its header's file format versions are 5 and"},
		{"read version 3", withByte(data, 19, 3), "corrupt or truncated"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			path := filepath.Join(dir, strings.ReplaceAll(tc.name, " ", "-")+".db")
			os.WriteFile(path, tc.data, 0o600)
			err := func() error {
				db, err := store.Open(path, false, "")
				if err != nil {
					return err
				}
				defer db.Close()
				runs, err := db.Runs()
				if err != nil {
					return err
				}
				for _, info := range runs {
					if _, err := db.Load(info); err != nil {
						return err
					}
				}
				return errors.New("no error")
			}()
			t.Log(err)
			var se *store.Error
			if !errors.As(err, &se) || !strings.Contains(err.Error(), "state file "+path+": ") || !strings.Contains(err.Error(), tc.msg) {
				t.Fatalf("got %v, want an error naming the file and %q", err, tc.msg)
			}
		})
	}
}

// TestOpenedAtOnceWhileCreated: processes that open a new database at the
// same moment all find a state database, whichever of them creates it (one
// of them used to read the new tables without their application id and
// call the file a foreign database).
func TestOpenedAtOnceWhileCreated(t *testing.T) {
	t.Parallel()
	for round := range 30 {
		path := filepath.Join(t.TempDir(), "runs.db")
		var wg sync.WaitGroup
		errs := make([]error, 4)
		for i := range errs {
			wg.Go(func() {
				db, err := store.Open(path, true, "")
				if err == nil {
					db.Close()
				}
				errs[i] = err
			})
		}
		wg.Wait()
		for _, err := range errs {
			if err != nil {
				t.Fatalf("round %d: %v", round, err)
			}
		}
	}
}

// So does a writer in the background, which Wait has finish each turn's
// write: the turns with warnings (written with them, in one transaction),
// memory and pending requests included.
func TestEveryTurnRoundTripsInTheBackground(t *testing.T) {
	t.Parallel()
	db, err := store.Open(filepath.Join(t.TempDir(), "runs.db"), true, "")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	roundTrip(t, testEnsemble(t), db, "behind", true)
}

// roundTrip plays testEnsemble as run id of db, saving every turn (in the
// background, with background, waiting for each), and checks after each
// that the run loaded from the database, through another connection, is
// the run in memory. It returns the finished run.
func roundTrip(t *testing.T, e *ensemble.Ensemble, db *store.DB, id string, background bool) *engine.Run {
	t.Helper()
	r := engine.New(e, "go", engine.Options{Runner: testRunner()})
	w, err := db.Create(id, r.File(""), stateKey(e))
	if err != nil {
		t.Fatal(err)
	}
	if background {
		w.Background()
	}
	reader, err := store.Open(db.Path(), false, "")
	if err != nil {
		t.Fatal(err)
	}
	defer reader.Close()
	check := func(reason string) {
		t.Helper()
		info, err := reader.Run(id)
		if err != nil {
			t.Fatal(err)
		}
		f, err := reader.Load(info)
		if err != nil {
			t.Fatal(err)
		}
		if got, want := asJSON(t, f.State), asJSON(t, r.State()); got != want {
			t.Fatalf("turn %d: loaded\n%s\nwant\n%s", r.State().TurnCount, got, want)
		}
		if f.CompletionReason != reason || info.Turns != r.State().TurnCount || f.Ensemble.SHA256 != e.Hash {
			t.Fatalf("turn %d: %q, %d turns, %+v", r.State().TurnCount, f.CompletionReason, info.Turns, f.Ensemble)
		}
	}
	check("")
	reason, sawPending, sawMemory, sawWarning := "", false, false, false
	for reason == "" {
		reason = r.Step(context.Background())
		st := r.State()
		sawPending = sawPending || len(st.Pending()) > 0
		sawMemory = sawMemory || len(st.Contents().Memory) > 0
		sawWarning = sawWarning || len(st.Warnings()) > 0
		if reason == "" {
			if err := w.SaveTurn(st); err != nil {
				t.Fatal(err)
			}
			if err := w.Wait(); err != nil {
				t.Fatal(err)
			}
			check("")
		}
	}
	if err := w.Finish(r.State(), reason, nil); err != nil {
		t.Fatal(err)
	}
	check(reason)
	w.Close()
	if reason != engine.Completed || !sawPending || !sawMemory || !sawWarning || r.State().Executions("publisher") != 1 {
		t.Fatalf("the run does not cover the cases: %s, pending %v, memory %v, warnings %v", reason, sawPending, sawMemory, sawWarning)
	}
	return r
}

// A run longer than a chunk of decoding reads back as it was written: the
// turns are decoded a chunk at a time, several rows at once, and applied
// in order, with the context values the last turn of each key left.
func TestLongRunReadsBack(t *testing.T) {
	t.Parallel()
	db, err := store.Open(filepath.Join(t.TempDir(), "long.db"), true, "")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	st := state.New("go")
	f := &state.File{Ensemble: state.FileRef{Name: "long", Path: "/long.yaml", SHA256: fmt.Sprintf("%064x", 1)}, State: st}
	w, err := db.Create("long", f, func(s string) string { return s })
	if err != nil {
		t.Fatal(err)
	}
	w.Background()
	for turn := 1; turn <= 2500; turn++ {
		pingPongTurn(st, turn, map[string]any{"n": float64(turn), "text": strings.Repeat("x", turn%7)})
		if err := w.SaveTurn(st); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Finish(st, engine.Completed, nil); err != nil {
		t.Fatal(err)
	}
	w.Close()
	info, err := db.Run("long")
	if err != nil {
		t.Fatal(err)
	}
	loaded, err := db.Load(info)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := withoutClock(t, loaded.State), withoutClock(t, st); got != want {
		t.Fatalf("loaded differs from the run (%d bytes against %d)", len(got), len(want))
	}
	if loaded.State.Context()["pong"].(map[string]any)["n"] != 2500.0 {
		t.Fatalf("pong's context: %v", loaded.State.Context()["pong"])
	}
}

// withByte is data with its byte at changed to b.
func withByte(data []byte, at int, b byte) []byte {
	d := append([]byte(nil), data...)
	d[at] = b
	return d
}
