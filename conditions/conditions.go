// Package conditions compiles and evaluates dependency conditions: expr
// expressions checked once at load time against a typed environment, required
// to be boolean, and run in a sandbox (SPEC §2.4).
package conditions

// Env is the typed environment a condition sees (SPEC §2.4).
type Env struct {
	Context    map[string]any `expr:"context"`
	TurnCount  int            `expr:"turn_count"`
	Executions map[string]int `expr:"executions"`
	History    []any          `expr:"history"`
	Input      string         `expr:"input"`
}

// Program is a compiled condition.
type Program struct {
	Source string
}

// Compile checks src once: it must parse, type-check against Env and be boolean.
func Compile(src string) (*Program, error) {
	panic("TODO: conditions.Compile")
}

// Eval runs the program in the sandbox. A run-time error is returned and the
// caller treats the condition as false.
func (p *Program) Eval(env *Env) (bool, error) {
	panic("TODO: conditions.Eval")
}
