package runners

import (
	"context"
	"fmt"
)

// WaitBefore has every execution of r that reaches outside the process
// call wait first, and fail with its error without running: a script, a
// model, a human, a child ensemble. What injected responses answer (r is
// an *InjectedRunner) runs at once: it is decided by the responses file
// alone, and plays again the same. r is changed in place (an
// *InjectedRunner keeps its place in the wiring) and returned.
//
// A durable run whose turns are saved in the background
// (store.Writer.Background) waits there for the turns it has done to be
// saved before it does what could not be done twice: a run killed before
// they are saved plays them again when it resumes
// (docs/semantics.md#durable-runs).
func WaitBefore(r Runner, wait func() error) Runner {
	ir, ok := r.(*InjectedRunner)
	if !ok {
		return &waiting{next: r, wait: wait}
	}
	if ir.Next != nil {
		ir.Next = &waiting{next: ir.Next, wait: wait}
	}
	if sim := ir.Simulate; sim != nil {
		ir.Simulate = func(ctx context.Context, req *Request, modelProfile, prompt string) *Result {
			if err := wait(); err != nil {
				return notRun(err)
			}
			return sim(ctx, req, modelProfile, prompt)
		}
	}
	return ir
}

type waiting struct {
	next Runner
	wait func() error
}

var _ Runner = (*waiting)(nil)

func (w *waiting) Run(ctx context.Context, req *Request) *Result {
	if err := w.wait(); err != nil {
		return notRun(err)
	}
	return w.next.Run(ctx, req)
}

func notRun(err error) *Result {
	return &Result{Err: fmt.Errorf("not run: the turns before it could not be saved: %w", err)}
}
