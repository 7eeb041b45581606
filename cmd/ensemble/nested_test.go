package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// SIGINT while a child ensemble runs stops the run (exit 130) with nothing
// of the turn saved; resume runs the child again from its start.
func TestSIGINTInsideAChildResumes(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	sp := filepath.Join(dir, "run.state")
	env := []string{"ENSEMBLE_PROFILES=", "NESTED_DIR=" + dir}
	cmd := cliCommand(t, env, "run", "testdata/nested/ensemble.yaml", "--state", sp, "--output", "json")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() { cmd.Process.Kill() })
	poll(t, "the child's script to block", 60*time.Second, func() bool {
		select {
		case err := <-exited:
			t.Fatalf("the run ended before blocking: %v\n%s", err, stderr.String())
		default:
		}
		_, err := os.Stat(filepath.Join(dir, "blocked"))
		return err == nil
	})
	if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	var err error
	select {
	case err = <-exited:
	case <-time.After(60 * time.Second):
		t.Fatal("the run did not end after SIGINT")
	}
	if code := exitCode(t, err); code != 130 {
		t.Fatalf("exit %d after SIGINT, want 130: %s", code, stderr.String())
	}
	if sf := readState(t, sp); sf.turn() != 0 || sf.CompletionReason != "cancelled" {
		t.Fatalf("after SIGINT the state holds turn %d, %q", sf.turn(), sf.CompletionReason)
	}

	resume := cliCommand(t, env, "resume", sp, "--output", "json")
	var stdout bytes.Buffer
	resume.Stdout, resume.Stderr = &stdout, &stderr
	if code := exitCode(t, resume.Run()); code != 0 {
		t.Fatalf("resume: exit %d: %s", code, stderr.String())
	}
	var res struct {
		CompletionReason    string           `json:"completion_reason"`
		FinalState          map[string]any   `json:"final_state"`
		ConversationHistory []map[string]any `json:"conversation_history"`
	}
	if err := json.Unmarshal(stdout.Bytes(), &res); err != nil {
		t.Fatal(err)
	}
	if res.CompletionReason != "completed" || res.FinalState["round"] != "done" {
		t.Fatalf("resumed: %s %v", res.CompletionReason, res.FinalState)
	}
	if child, _ := res.ConversationHistory[0]["child"].(map[string]any); child == nil || child["turn_count"] != 2.0 {
		t.Errorf("the round's record: %v", res.ConversationHistory[0])
	}
	log, _ := os.ReadFile(filepath.Join(dir, "log"))
	if got, want := strings.Fields(string(log)), []string{"first", "blocker", "first", "blocker", "after"}; strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("executions %v, want %v (the child again from its start)", got, want)
	}
}

// validate of a folder validates each child ensemble with the file that
// includes it, not on its own, and says how many it validated.
func TestValidateATree(t *testing.T) {
	t.Parallel()
	o := ensembleCmd(t, "", "validate", "../../examples/")
	if o.code != 0 {
		t.Fatalf("exit %d: %s", o.code, o.stderr)
	}
	if !strings.Contains(o.stdout, "examples/routing/ensemble.yaml: ok (with 3 child ensembles)\n") || strings.Contains(o.stdout, "topics/") {
		t.Errorf("stdout:\n%s", o.stdout)
	}
}
