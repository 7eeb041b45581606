package durable_test

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ensemble-run/ensemble/durable"
	"github.com/ensemble-run/ensemble/state"
	"github.com/ensemble-run/ensemble/store"
)

// pingPong writes a run id of turns turns to the database at path, two
// agents taking turns, and returns its writer, still open (the run locked,
// as by a process that goes on writing it).
func pingPong(t *testing.T, path, id string, turns int) (*store.DB, *store.Writer) {
	t.Helper()
	db, err := store.Open(path, true, "")
	if err != nil {
		t.Fatal(err)
	}
	st := state.New("go")
	f := &state.File{Ensemble: state.FileRef{Name: "pingpong", Path: "/pingpong.yaml", SHA256: fmt.Sprintf("%064x", 1)}, State: st}
	w, err := db.Create(id, f, func(s string) string { return s })
	if err != nil {
		t.Fatal(err)
	}
	for turn := 1; turn <= turns; turn++ {
		agent := "ping"
		if turn%2 == 0 {
			agent = "pong"
		}
		st.CountExecution(agent)
		out := map[string]any{"turn": float64(turn)}
		st.SetOutput(agent, agent, out)
		st.AppendRecord(&state.Record{TurnNumber: turn, AgentName: agent, Execution: st.Executions(agent), OutputData: out, Timestamp: time.Now().UTC()})
		st.TurnCount = turn
		if err := w.SaveTurn(st); err != nil {
			t.Fatal(err)
		}
	}
	return db, w
}

// A fork is a new run of the database with the first turns of the run
// forked and its parent, which can be forked while a process writes it
// (its committed turns are copied). A JSON state file, a run the database
// does not hold and a turn the run has not reached are refused, each
// saying why.
func TestFork(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := filepath.Join(dir, "runs.db")
	db, w := pingPong(t, path, "first", 4)
	defer db.Close()
	defer w.Close()

	id, err := durable.Fork(path, "first", 3, store.SyncNormal)
	if err != nil {
		t.Fatal(err)
	}
	sf, info, err := durable.Load(path, id)
	if err != nil {
		t.Fatal(err)
	}
	if info.Parent != "first" || info.ParentTurn != 3 || info.Turns != 3 || info.CompletionReason != "" {
		t.Errorf("the fork is listed as %+v", info)
	}
	if st := sf.State; st.TurnCount != 3 || len(st.History()) != 3 || st.Executions("ping") != 2 || st.Executions("pong") != 1 ||
		sf.Parent == nil || sf.Parent.Run != "first" || sf.Parent.Turn != 3 {
		t.Errorf("the fork loads turn %d, %d records, executions %v, parent %+v", st.TurnCount, len(st.History()), st.Contents().AgentExecutionCount, sf.Parent)
	}
	// A fork of the fork, from its start: the run's input.
	id2, err := durable.Fork(path, id, 0, store.SyncNormal)
	if err != nil {
		t.Fatal(err)
	}
	if sf, info, err = durable.Load(path, id2); err != nil || sf.State.TurnCount != 0 || sf.State.Input != "go" || info.Parent != id {
		t.Errorf("a fork of a fork from turn 0: %+v, %v", info, err)
	}

	json := filepath.Join(dir, "run.json")
	data, err := state.Marshal(sf)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(json, data, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		path, id string
		turn     int
		want     []string
	}{
		{json, "", 0, []string{json, "JSON state file", "forks need a state database"}},
		{path, "nope", 1, []string{`no run "nope"`, "first", id}},
		{path, "first", 5, []string{"turn 5", "4 turns", "0 (its start) to 4"}},
		{path, "first", -1, []string{"turn -1", "4 turns"}},
	} {
		_, err := durable.Fork(c.path, c.id, c.turn, store.SyncNormal)
		for _, want := range c.want {
			if err == nil || !strings.Contains(err.Error(), want) {
				t.Errorf("fork %s %q from %d: %v, want it to say %q", filepath.Base(c.path), c.id, c.turn, err, want)
			}
		}
		if _, err := durable.OpenFork(c.path, c.id, c.turn, store.SyncNormal); err == nil {
			t.Errorf("open a fork %s %q from %d: no error", filepath.Base(c.path), c.id, c.turn)
		}
	}
	if _, err := durable.Fork(path, "nope", 1, store.SyncNormal); !errors.Is(err, durable.ErrPick) {
		t.Errorf("an unknown run: %v, want ErrPick", err)
	}
	runs, err := durable.List(path)
	if err != nil || len(runs) != 3 {
		t.Fatalf("runs %v, %v", runs, err)
	}
}

// OpenFork writes nothing until the fork goes on (Continue): a fork that
// its checks refuse leaves no run behind. Continue adds it, locked.
func TestOpenForkAddsTheForkOnContinue(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "runs.db")
	db, w := pingPong(t, path, "first", 4)
	w.Close()
	db.Close()

	s, err := durable.OpenFork(path, "first", 2, store.SyncNormal)
	if err != nil {
		t.Fatal(err)
	}
	if !s.IsFork() || s.File.State.TurnCount != 2 || s.File.Parent == nil || s.Info.ID != "first" {
		t.Errorf("open fork: %+v %+v", s.File.Parent, s.Info)
	}
	s.Close()
	if runs, err := durable.List(path); err != nil || len(runs) != 1 {
		t.Fatalf("a fork not continued left runs %v, %v", runs, err)
	}

	s, err = durable.OpenFork(path, "first", 2, store.SyncNormal)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, err := s.Continue(durable.Refs{}); err != nil {
		t.Fatal(err)
	}
	if s.Info.ID == "first" || s.Info.Parent != "first" || s.Info.ParentTurn != 2 {
		t.Errorf("the fork continued is %+v", s.Info)
	}
	if _, err := durable.Open(path, s.Info.ID, store.SyncNormal); !errors.Is(err, store.ErrLocked) {
		t.Errorf("the fork continued is not locked: %v", err)
	}
}
