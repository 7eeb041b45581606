package conditions

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"
)

// FuzzCompileEval checks that no condition text makes Compile or Eval panic
// or run away: Compile either returns a Program or a *CompileError with a
// one-line message, and evaluation either gives a boolean or a
// *RuntimeError, within the sandbox's budgets. make test runs it briefly.
func FuzzCompileEval(f *testing.F) {
	for _, s := range []string{
		`context.a?.b == true`,
		`executions.writer >= 2 && turn_count < 10`,
		`len(history) > 0 && history[-1].agent_name == "x"`,
		`input matches "^[a-z]+$"`,
		`len(string(groupBy(1..400000, #))) > 3`,
		`repeat("x", 1000000) != ""`,
		`context["o-x"]?.say ?? false`,
		`any(context.list ?? [], # > 1)`,
		`toJSON(context) contains "k"`,
	} {
		f.Add(s)
	}
	env := &Env{
		Context:    map[string]any{"a": map[string]any{"b": true}, "list": []any{1.0, 2.0}, "s": "text"},
		TurnCount:  3,
		Executions: map[string]int{"writer": 2},
		History:    []any{map[string]any{"agent_name": "writer", "turn_number": 1}},
		Input:      "hello",
	}
	f.Fuzz(func(t *testing.T, src string) {
		p, err := Compile(src)
		if err != nil {
			var ce *CompileError
			if !errors.As(err, &ce) || strings.Contains(ce.Error(), "\n") {
				t.Fatalf("compile error %T %q", err, err)
			}
			return
		}
		// A generous deadline: the budgets, not the clock, must stop it.
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if _, err := p.EvalContext(ctx, env); err != nil {
			var re *RuntimeError
			if !errors.As(err, &re) {
				t.Fatalf("run-time error %T %v", err, err)
			}
			if errors.Is(err, context.DeadlineExceeded) {
				t.Fatalf("%q ran past the budgets until the deadline", src)
			}
		}
	})
}
