package inspector_test

import (
	"time"

	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ensemble-run/ensemble/durable"
	"github.com/ensemble-run/ensemble/internal/inspector"
	"github.com/ensemble-run/ensemble/store"
)

// copyExample copies examples/NAME into a folder of the test, which the
// test may then change (its ensemble file removed, say).
func copyExample(t *testing.T, name string) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), name)
	if out, err := exec.Command("cp", "-r", filepath.Join("..", "..", "examples", name), dir).CombinedOutput(); err != nil {
		t.Fatalf("cp: %v: %s", err, out)
	}
	return dir
}

// A fork refused because the run's ensemble file is gone writes nothing:
// no run is left behind in the database, unfinished (which a later resume
// without --run-id would then have to choose among), as resume --from-turn
// writes nothing when its checks refuse.
func TestForkRefusedLeavesNoRun(t *testing.T) {
	t.Parallel()
	needPython(t)
	dir := copyExample(t, "map-reduce")
	path := filepath.Join(t.TempDir(), "runs.db")
	id := saveRunOf(t, path, dir, true)
	if err := os.Remove(filepath.Join(dir, "ensemble.yaml")); err != nil {
		t.Fatal(err)
	}
	f := serveDB(t, path)
	var got struct {
		ID    string
		Error string
	}
	if code := f.do(t, "POST", "/api/run/fork?id="+id, map[string]any{"turn": 2}, &got); code == 200 || !strings.Contains(got.Error, "cannot be read") {
		t.Errorf("a fork of a run whose ensemble file is gone: %d %+v, want it refused, saying why", code, got)
	}
	if runs := f.runs(t, ""); len(runs) != 1 {
		t.Errorf("after a refused fork, the database holds %v, want the run forked only", ids(runs))
	}
}

// slowEnsemble writes an ensemble of two script agents, first then second;
// second sleeps a minute while the file SLOW is beside it.
func slowEnsemble(t *testing.T) (dir string) {
	t.Helper()
	dir = t.TempDir()
	files := map[string]string{
		"ensemble.yaml": "name: slow\ninput: go\nagents:\n  - name: first\n    script: first.sh\n  - name: second\n    script: second.sh\n    dependencies: [first]\n",
		"first.sh":      "#!/bin/sh\ncat >/dev/null\necho '{\"success\": true, \"data\": 1}'\n",
		"second.sh":     "#!/bin/sh\ncat >/dev/null\nif [ -f \"$(dirname \"$0\")/SLOW\" ]; then sleep 60; fi\necho '{\"success\": true, \"data\": 2}'\n",
	}
	for name, text := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// A server that stops while a fork it started goes on interrupts the
// fork: saved as interrupted, not locked, and resume goes on with it.
func TestCloseInterruptsABackgroundRun(t *testing.T) {
	t.Parallel()
	dir := slowEnsemble(t)
	path := filepath.Join(t.TempDir(), "runs.db")
	id := saveRunOf(t, path, dir, false)
	if err := os.WriteFile(filepath.Join(dir, "SLOW"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	f := serveDB(t, path)
	var got struct {
		ID    string
		Error string
	}
	if code := f.do(t, "POST", "/api/run/fork?id="+id, map[string]any{"turn": 1}, &got); code != 200 {
		t.Fatalf("fork: %d %+v", code, got)
	}
	f.waitStatus(t, got.ID, inspector.StatusRunning)
	closed := make(chan error, 1)
	go func() { closed <- f.srv.Close() }()
	select {
	case err := <-closed:
		if err != nil {
			t.Errorf("Close: %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("Close waits for the background run's minute-long script")
	}
	saved, err := durable.Open(path, got.ID, store.SyncNormal)
	if err != nil {
		t.Fatalf("the fork after Close: %v", err)
	}
	defer saved.Close()
	if !saved.File.Resumable() || saved.File.State.TurnCount != 1 || saved.File.Parent == nil {
		t.Errorf("the fork after Close: %q, %d turns, parent %v; want it resumable from turn 1", saved.File.CompletionReason, saved.File.State.TurnCount, saved.File.Parent)
	}
}

// askLoop writes an ensemble whose approver asks again after each "no".
func askLoop(t *testing.T) (dir string) {
	t.Helper()
	dir = t.TempDir()
	files := map[string]string{
		"ensemble.yaml": `name: ask-loop
input: go
agents:
  - name: brief
    script: brief.sh
  - name: writer
    script: brief.sh
    dependencies:
      - brief
      - agent_name: approver
        requires_all: false
        condition: "context.approver?.approved != true"
    conversation: {max_turns: 5}
  - name: approver
    ask: "Approve?"
    ask_mode: suspend
    dependencies: [writer]
    conversation: {max_turns: 5}
`,
		"brief.sh": "#!/bin/sh\ncat >/dev/null\necho '{\"success\": true, \"data\": \"draft\"}'\n",
	}
	for name, text := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// An answer sent twice (a second tab, a second press) answers the question
// it was given for only: once the run has gone on to ask again, the
// second is refused, not taken as the answer to the new question.
func TestAnswerTwiceAnswersOnce(t *testing.T) {
	t.Parallel()
	dir := askLoop(t)
	path := filepath.Join(t.TempDir(), "runs.db")
	id := saveRunOf(t, path, dir, false)
	f := serveDB(t, path)
	run := f.waitStatus(t, id, inspector.StatusSuspended)
	body := map[string]any{"answers": map[string]string{"approver": `{"approved": false}`}, "turns": run.Turns}
	var got struct{ Error string }
	if code := f.do(t, "POST", "/api/run/answer?id="+id, body, &got); code != 200 {
		t.Fatalf("answer: %d %q", code, got.Error)
	}
	again := f.waitStatus(t, id, inspector.StatusSuspended)
	for again.Turns == run.Turns {
		time.Sleep(50 * time.Millisecond)
		again = f.waitStatus(t, id, inspector.StatusSuspended)
	}
	if code := f.do(t, "POST", "/api/run/answer?id="+id, body, &got); code != 409 || !strings.Contains(got.Error, "turn") {
		t.Errorf("the same answer again, once the run asks again: %d %q, want 409", code, got.Error)
	}
	if now := f.waitStatus(t, id, inspector.StatusSuspended); now.Turns != again.Turns {
		t.Errorf("the second answer went on with the run: %d turns, want %d", now.Turns, again.Turns)
	}
}
