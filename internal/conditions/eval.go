package conditions

import (
	"context"
	"fmt"
	"strings"
	"sync"

	"github.com/expr-lang/expr/vm"
)

// Evaluating a condition: pooled runners, each with its meter.

// Eval is EvalContext with a context that is never cancelled.
func (p *Program) Eval(env *Env) (bool, error) {
	return p.EvalContext(context.Background(), env)
}

// EvalContext runs the program in the sandbox. A run-time error is returned
// (as a *RuntimeError) together with false; the caller treats the condition
// as false, unless the error wraps ctx's error: the evaluation was
// interrupted, and has no result. A nil program is the empty condition: true.
// EvalContext never panics and is safe for concurrent use; env is only read.
func (p *Program) EvalContext(ctx context.Context, env *Env) (result bool, err error) {
	if p == nil || p.prog == nil {
		return true, nil
	}
	r, err := runnerFor(ctx, "")
	if err != nil {
		return false, err
	}
	defer recovered(&result, &err, "")
	if env != nil {
		r.env.Env = *env
	}
	r.meter = meter{bytes: MaxBytes, steps: MaxSteps, ctx: ctx, reads: r.env.Reads, source: strings.TrimSpace(p.Source)}
	r.vm.MemoryBudget = MaxMemory
	out, runErr := r.vm.Run(p.prog, &r.env)
	r.reset()
	runnerPool.Put(r)
	if runErr != nil {
		return false, runtimeError(runErr, p.Source)
	}
	b, ok := out.(bool)
	if !ok {
		return false, &RuntimeError{Msg: fmt.Sprintf("condition must be boolean, but it returned %s", typeWords(typeName(out)))}
	}
	return b, nil
}

// runner is what one evaluation needs; runners are pooled, one per concurrent
// evaluation.
type runner struct {
	vm    vm.VM
	env   evalEnv
	meter meter
}

var runnerPool = sync.Pool{New: func() any {
	r := &runner{}
	r.env.m = &r.meter
	return r
}}

func (r *runner) reset() {
	r.env.Env, r.env.Output, r.env.Status, r.env.Error = Env{}, nil, "", nil
	r.meter.ctx, r.meter.reads = nil, nil
	clear(r.vm.Variables)
	clear(r.vm.Stack[:cap(r.vm.Stack)])
	r.vm.Stack = r.vm.Stack[:0]
}

// evalEnv is the environment of the guarded program: Env's names, plus the
// meter of the evaluation, which conditions cannot see (unexported) but the
// guard functions reach through `$env`.
type evalEnv struct {
	Env
	Output any    `expr:"output"` // a select's dependency output; conditions cannot name it
	Status string `expr:"status"` // a loop's iteration outcome (loopEnv); others cannot name them
	Error  any    `expr:"error"`
	m      *meter
}
