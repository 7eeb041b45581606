package conditions

import (
	"context"
	"strings"
)

// Select is a dependency's select: an expression over the dependency's
// output (output) and the conditions' names, whose value is what the edge
// delivers (docs/semantics.md#choosing-what-an-edge-delivers). It is
// immutable and safe for concurrent use.
type Select struct {
	Program
}

// selectEnv is the names a select may use: the conditions' and output.
type selectEnv struct {
	Env
	Output any `expr:"output"`
}

// loopEnv is the names a loop's until and carry may use: a select's, and
// the iteration's outcome.
type loopEnv struct {
	selectEnv
	Status string `expr:"status"`
	Error  any    `expr:"error"`
}

// Outcome is how an iteration of a loop ended, which its until and carry
// see: status "ok" or "failed", and error, the failure's message (nil when
// ok).
type Outcome struct {
	Status string
	Error  any
}

// CompileLoop checks a loop's until or carry: a select that also sees
// status and error (EvalOutcome).
func CompileLoop(src string) (*Select, error) {
	p, err := compile(src, "select", loopEnv{}, evalEnv{})
	if err != nil {
		return nil, err
	}
	return &Select{*p}, nil
}

// EvalOutcome is EvalContext with an iteration's outcome (CompileLoop).
func (s *Select) EvalOutcome(ctx context.Context, env *Env, output any, o Outcome) (any, error) {
	return s.eval(ctx, env, output, o)
}

// CompileSelect checks a select expression once, as Compile does a
// condition; its value may be of any type.
func CompileSelect(src string) (*Select, error) {
	p, err := compile(src, "select", selectEnv{}, evalEnv{})
	if err != nil {
		return nil, err
	}
	return &Select{*p}, nil
}

// EvalContext runs the select in the sandbox over output. A run-time error
// is a *RuntimeError.
func (s *Select) EvalContext(ctx context.Context, env *Env, output any) (result any, err error) {
	return s.eval(ctx, env, output, Outcome{})
}

func (s *Select) eval(ctx context.Context, env *Env, output any, o Outcome) (result any, err error) {
	r, err := runnerFor(ctx, "select")
	if err != nil {
		return nil, err
	}
	defer recovered(&result, &err, "select")
	if env != nil {
		r.env.Env = *env
	}
	r.env.Output, r.env.Status, r.env.Error = output, o.Status, o.Error
	r.meter = meter{bytes: MaxBytes, steps: MaxSteps, ctx: ctx, reads: r.env.Reads, source: strings.TrimSpace(s.Source)}
	r.vm.MemoryBudget = MaxMemory
	out, runErr := r.vm.Run(s.prog, &r.env)
	r.reset()
	runnerPool.Put(r)
	if runErr != nil {
		re := runtimeError(runErr, s.Source)
		re.What = "select"
		return nil, re
	}
	return out, nil
}
