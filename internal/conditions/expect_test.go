package conditions_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/ensemble-run/ensemble/internal/conditions"
)

// An expectation sees the conditions' names plus held_back and errors, and
// lists the values it read: the longest context paths, executions and the
// other names it uses.
func TestExpectation(t *testing.T) {
	t.Parallel()
	final := &conditions.Final{
		Env: conditions.Env{
			Context:    map[string]any{"judge": map[string]any{"verdict": "REJECT", "score": 2.0}, "fix": nil},
			Executions: map[string]int{"fix": 2, "judge": 1},
			TurnCount:  3,
			Input:      "the diff",
		},
		HeldBack: []string{"fix"},
		Errors:   []any{map[string]any{"agent_name": "lint", "handled": true}},
	}
	tests := []struct {
		src   string
		held  bool
		err   string
		reads string
	}{
		{"context.judge.verdict == 'APPROVE'", false, "", "[{context.judge.verdict REJECT false}]"},
		{"context.judge.verdict == 'REJECT' && context.judge != nil", true, "", "[{context.judge.verdict REJECT false}]"},
		{"'fix' in held_back", true, "", "[{held_back [fix] false}]"},
		{"len(held_back) == 0", false, "", "[{held_back [fix] false}]"},
		{"all(errors, .handled) && executions.fix == 2", true, "", "[{executions.fix 2 false} {errors [map[agent_name:lint handled:true]] false}]"},
		{"context.judge?.reason == nil", true, "", "[{context.judge.reason <nil> true}]"},
		{"context.judge.score > 3 || turn_count > 5 || input == ''", false, "", "[{context.judge.score 2 false} {turn_count 3 false} {input the diff false}]"},
		{"context.judge.verdict > 3", false, "invalid operation", "[{context.judge.verdict REJECT false}]"},
		{"context.judge.verdict", false, "expectation must be boolean, but it returned a string", "[{context.judge.verdict REJECT false}]"},
	}
	for _, tc := range tests {
		x, err := conditions.CompileExpectation(tc.src)
		if err != nil {
			t.Fatalf("%s: %v", tc.src, err)
		}
		held, err := x.EvalContext(context.Background(), final)
		var re *conditions.RuntimeError
		switch {
		case tc.err == "" && err != nil, tc.err != "" && (err == nil || !errors.As(err, &re) || !strings.Contains(err.Error(), tc.err)):
			t.Errorf("%s: error %v, want %q", tc.src, err, tc.err)
		case held != tc.held:
			t.Errorf("%s: held %t, want %t", tc.src, held, tc.held)
		}
		if got := fmt.Sprint(x.Reads(final)); got != tc.reads {
			t.Errorf("%s: reads %s, want %s", tc.src, got, tc.reads)
		}
	}
	// A condition cannot name what only expectations see.
	if _, err := conditions.Compile("len(held_back) == 0"); err == nil {
		t.Error("a condition compiled with held_back")
	}
}
