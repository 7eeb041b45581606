package conditions

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"
)

// FuzzCompileEval checks that no condition text makes Compile or Eval
// panic: Compile either returns a Program or a *CompileError with a
// one-line message, and evaluation gives a boolean, a *RuntimeError, or
// stops at its context's deadline. make test runs it briefly.
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
		// The budgets bound memory and steps, not time (a condition within
		// every budget can take minutes): a short deadline keeps the fuzzer
		// moving, and an evaluation it stops must say so.
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		if _, err := p.EvalContext(ctx, env); err != nil {
			var re *RuntimeError
			if !errors.As(err, &re) && !errors.Is(err, context.DeadlineExceeded) {
				t.Fatalf("run-time error %T %v", err, err)
			}
		}
	})
}
