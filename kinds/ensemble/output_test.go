package ensemble_test

import (
	"context"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/ensemble-run/ensemble/engine"
)

// A child file that names its output agent: what it returns to a parent.
const returningChild = `name: review
output: judge
agents:
  - name: critic
    script: noop.sh
  - name: judge
    script: noop.sh
    dependencies:
      - agent_name: critic
        condition: "context.critic != 'stop'"
    output_schema:
      type: object
      properties: {verdict: {enum: [yes, no]}}
      required: [verdict]
`

// TestParentUsesTheChildsOutput: an ensemble or dispatch agent without an
// output of its own gets what the child file returns, its output: agent's
// output, not its whole final state; one with its own output: gets that
// agent's; a child whose output agent never produced one fails the
// execution (its critic says stop: the judge never runs).
func TestParentUsesTheChildsOutput(t *testing.T) {
	t.Parallel()
	verdict := map[string]any{"verdict": "yes"}
	tests := []struct {
		name   string
		parent string
		plays  map[string][]any
		want   any    // the parent's final state under "round"
		fails  string // the round's error, instead
	}{
		{"ensemble", `
  - name: round
    ensemble: review.yaml`, map[string][]any{"round/critic": {"fine"}, "round/judge": {verdict}}, verdict, ""},
		{"its own output wins", `
  - name: round
    ensemble: review.yaml
    output: critic`, map[string][]any{"round/critic": {"fine"}, "round/judge": {verdict}}, "fine", ""},
		{"dispatch", `
  - name: round
    dispatch: {on: "'r'", cases: {r: review.yaml}}`, map[string][]any{"round/critic": {"fine"}, "round/judge": {verdict}}, verdict, ""},
		{"a loop's until reads it", `
  - name: round
    ensemble: review.yaml
    loop: {until: "output.verdict == 'yes'", max_iterations: 3}`,
			map[string][]any{"round/critic": {"fine"}, "round/judge": {map[string]any{"verdict": "no"}, verdict}}, verdict, ""},
		{"no output", `
  - name: round
    ensemble: review.yaml`, map[string][]any{"round/critic": {"stop"}}, nil, `its agent "judge" has no output`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			writeFile(t, filepath.Join(dir, "review.yaml"), returningChild)
			if err := os.WriteFile(filepath.Join(dir, "noop.sh"), []byte("#!/bin/sh\necho '\"noop\"'\n"), 0o755); err != nil {
				t.Fatal(err)
			}
			writeFile(t, filepath.Join(dir, "parent.yaml"), "name: parent\nagents:"+tt.parent+"\n")
			res, _ := run(t, context.Background(), filepath.Join(dir, "parent.yaml"), "in", newFake(tt.plays), nil)
			if tt.fails != "" {
				if len(res.Errors) == 0 || !strings.Contains(res.Errors[len(res.Errors)-1].Message, tt.fails) {
					t.Fatalf("errors %s, want %q", failures(res), tt.fails)
				}
				return
			}
			if res.CompletionReason != engine.Completed || len(res.Errors) != 0 {
				t.Fatalf("%s %s", res.CompletionReason, failures(res))
			}
			if got := res.FinalState["round"]; !reflect.DeepEqual(got, tt.want) {
				t.Errorf("round's output %#v, want %#v", got, tt.want)
			}
		})
	}
}

// TestLoopLiteralsAgainstTheChildsOutput: a loop's until, without an output
// of the agent's own, is checked against the schema of the agent the child
// returns.
func TestLoopLiteralsAgainstTheChildsOutput(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "review.yaml"), returningChild)
	if err := os.WriteFile(filepath.Join(dir, "noop.sh"), []byte("#!/bin/sh\necho '\"noop\"'\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(dir, "parent.yaml"), `name: parent
agents:
  - name: round
    ensemble: review.yaml
    loop: {until: "output.verdict == 'maybe'", max_iterations: 3}
`)
	_, err := load(t, filepath.Join(dir, "parent.yaml"))
	if err == nil || !strings.Contains(err.Error(), `'maybe' is not one of "yes", "no"`) {
		t.Errorf("until compares the child's output with a value its schema rules out: %v", err)
	}
}
