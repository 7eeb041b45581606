package bdd

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Two agents wait at once; each answer resumes the run, which waits again
// until both are answered. An answer for an agent the run does not wait
// for fails its step.
func TestAnswersResumeTheScenario(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	ens := `name: e
input: draft
agents:
  - name: legal
    ask: "Legal OK?"
  - name: editor
    ask: "Editor OK?"
  - name: publisher
    ask: "Publish?"
    ask_mode: suspend
    dependencies: [legal, editor]
`
	if err := os.WriteFile(filepath.Join(dir, "e.yaml"), []byte(ens), 0o644); err != nil {
		t.Fatal(err)
	}
	feature := `Feature: answers
  Scenario: two at once, then one more
    Given the ensemble "e.yaml"
    When the ensemble runs
    Then the run is waiting for input from "legal"
    And the run is waiting for input from "editor"
    And the turn count is 0
    And the exit code is 5
    When "legal" answers "{\"ok\": true}"
    Then the run is waiting for input from "editor"
    And the output of agent "legal" is:
      """
      {"ok": true}
      """
    When "editor" answers "fine"
    Then the run is waiting for input from "publisher"
    And the turn count is 2
    When "publisher" answers "yes"
    Then the completion reason is "completed"
    And the agents ran in this order: "legal, editor, publisher"

  Scenario: an answer nobody waits for
    Given the ensemble "e.yaml"
    When the ensemble runs
    And "publisher" answers "yes"
`
	f := filepath.Join(dir, "answers.feature")
	if err := os.WriteFile(f, []byte(feature), 0o644); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	code, err := Run(RunOptions{Paths: []string{f}, Format: "progress", Output: &out, Stderr: &out})
	if code != ExitFailed || err != nil {
		t.Fatalf("exit %d, %v\n%s", code, err, out.String())
	}
	for _, want := range []string{
		"1 passed", "1 failed",
		`agent "publisher" is not waiting for input (it waits for legal, editor)`,
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
}
