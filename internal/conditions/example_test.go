package conditions_test

import (
	"errors"
	"fmt"

	"github.com/ensemble-run/ensemble/internal/conditions"
)

// The usual shape: a dependency that only counts while the reviewer has not
// approved. Context values are untyped, so `?.` and `??` handle "maybe missing".
func ExampleCompile() {
	p, err := conditions.Compile("context.reviewer?.approved ?? false")
	if err != nil {
		panic(err)
	}
	env := &conditions.Env{Context: map[string]any{}}
	before, _ := p.Eval(env)
	env.Context["reviewer"] = map[string]any{"approved": true}
	after, _ := p.Eval(env)
	fmt.Println(before, after)
	// Output: false true
}

// Compile errors carry the position inside the expression, so the loader can
// point at the right column of the YAML file.
func ExampleCompileError() {
	_, err := conditions.Compile("executions.writer >= 2 && reviewr.approved")
	var ce *conditions.CompileError
	if errors.As(err, &ce) {
		fmt.Println(ce.Line, ce.Column, ce.Msg)
	}
	fmt.Println(err)

	_, err = conditions.Compile("len(history)")
	fmt.Println(err)
	// Output:
	// 1 27 unknown name reviewr
	// unknown name reviewr (column 27 of the condition)
	// condition must be boolean, but it is always a number
}

// History is a list of execution records; negative indexes count from the end.
func ExampleProgram_Eval_history() {
	p := conditions.MustCompile(`len(history) > 1 && history[-1].agent_name == "reviewer" && executions.writer >= 2`)
	ok, err := p.Eval(&conditions.Env{
		Executions: map[string]int{"writer": 2, "reviewer": 1},
		History: []any{
			map[string]any{"agent_name": "writer", "turn_number": 1},
			map[string]any{"agent_name": "writer", "turn_number": 2},
			map[string]any{"agent_name": "reviewer", "turn_number": 3},
		},
	})
	fmt.Println(ok, err)
	// Output: true <nil>
}

// A condition that fails at run time evaluates to false with an error; the
// engine reports it as a warning.
func ExampleProgram_Eval_runtimeError() {
	p := conditions.MustCompile("context.draft.approved == true")
	ok, err := p.Eval(&conditions.Env{Context: map[string]any{"draft": "just text"}})
	fmt.Println(ok, err != nil)
	// Output: false true
}

// Everything a condition builds is metered: huge allocations fail cleanly.
func ExampleErrMemoryBudget() {
	p := conditions.MustCompile(`repeat(repeat("x", 1000000), 1000000) != ""`)
	_, err := p.Eval(&conditions.Env{})
	fmt.Println(errors.Is(err, conditions.ErrMemoryBudget))
	// Output: true
}
