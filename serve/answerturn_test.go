package serve_test

import (
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// ?turn=N is the run's turn_count when the answer was written
// (docs/serve.md#answering-a-run-that-waits), and a run whose first agent
// asks waits at turn_count 0: ?turn=0 answers it, and refuses to answer
// once the run has gone on.
func TestAnswerAtTurnZero(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "first"), 0o755); err != nil {
		t.Fatal(err)
	}
	src := "name: first\nagents:\n  - name: approver\n    ask: Go?\n    conversation: {max_turns: 2}\n" +
		"  - name: again\n    ask: Again?\n    dependencies: [approver]\n"
	if err := os.WriteFile(filepath.Join(dir, "first", "ensemble.yaml"), []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	s := startServer(t, dir, nil)
	r := s.start(t, "first", nil)
	if r.Status != "awaiting_input" {
		t.Fatalf("%+v", r)
	}
	path := "/v1/runs/" + r.RunID + "/answers"
	if code, b, _ := s.do(t, "POST", path+"?turn=1", map[string]any{"approver": "yes"}); code != http.StatusConflict {
		t.Fatalf("an answer for turn 1 of a run at 0: %d %s", code, b)
	}
	code, b, _ := s.do(t, "POST", path+"?turn=0", map[string]any{"approver": "yes"}, "Prefer", "wait=180")
	if got := decodeRun(t, b); code != http.StatusAccepted || got.Status != "awaiting_input" {
		t.Fatalf("answer at turn 0: %d %s", code, b)
	}
	// The run went on to its next question: an answer written at turn 0
	// is stale now.
	code, b, _ = s.do(t, "POST", path+"?turn=0", map[string]any{"again": "yes"})
	if code != http.StatusConflict || !strings.Contains(string(b), "gone on") {
		t.Fatalf("stale answer at turn 0: %d %s", code, b)
	}
}
