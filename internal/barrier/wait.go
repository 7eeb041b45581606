// Package barrier holds back the executions of a durable run that reach
// outside the process until the turns before them are saved.
package barrier

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"

	"github.com/ensemble-run/ensemble/agent"
	"github.com/ensemble-run/ensemble/internal/responses"
	"github.com/ensemble-run/ensemble/state"
)

// ErrNotSaved is the error of an execution that did not run because the
// turns before it could not be saved (Barrier): trying it again cannot
// help, the engine does not.
var ErrNotSaved = errors.New("not run: the turns before it could not be saved")

// Barrier holds back the executions that reach outside the process until
// the turns before them are saved: a durable run whose turns are saved in
// the background (store.Writer.Background) goes on ahead of its database,
// and must not do what could not be done twice before the turns it starts
// from are saved, since a run killed then plays them again when it
// resumes (docs/semantics.md#durable-runs).
type Barrier struct {
	// Wait waits for every turn given to the store to be saved, and
	// returns the error that stopped the saves, if any.
	Wait func() error

	reached atomic.Bool
}

// Wrap has every execution of r that reaches outside the process call
// b.Wait first, and fail with ErrNotSaved without running when it fails:
// a script, a model, a simulated user, a human, a child ensemble. What
// injected responses answer (r is a *responses.InjectedRunner) runs at once: it is
// decided by the responses file alone, and plays again the same. r is
// changed in place (a *responses.InjectedRunner keeps its place in the wiring) and
// returned.
func (b *Barrier) Wrap(r agent.Runner) agent.Runner {
	ir, ok := r.(*responses.InjectedRunner)
	if !ok {
		return &waiting{next: r, b: b}
	}
	if ir.Next != nil {
		ir.Next = &waiting{next: ir.Next, b: b}
	}
	if sim := ir.Simulate; sim != nil {
		ir.Simulate = func(ctx context.Context, req *agent.Request, modelProfile, prompt string) *agent.Result {
			if res := b.pass(); res != nil {
				return res
			}
			return sim(ctx, req, modelProfile, prompt)
		}
	}
	return ir
}

// Reached reports whether an execution went through the barrier since the
// last call: the turn it belongs to reached outside the process, and is to
// be saved before the next one starts (a kill must not make it run again
// after turns that followed it).
func (b *Barrier) Reached() bool { return b.reached.Swap(false) }

// AfterTurn is what a run calls after each turn (engine.Options.AfterTurn)
// when save stores the turn in the background: save, then, when an
// execution of the turn went through the barrier, Wait for it to be saved
// before the next turn starts.
func (b *Barrier) AfterTurn(save func(*state.State) error) func(*state.State) error {
	return func(st *state.State) error {
		if err := save(st); err != nil {
			return err
		}
		if b.Reached() {
			return b.Wait()
		}
		return nil
	}
}

// pass waits, and returns the result of an execution that must not run, or
// nil.
func (b *Barrier) pass() *agent.Result {
	if err := b.Wait(); err != nil {
		return &agent.Result{Err: fmt.Errorf("%w: %w", ErrNotSaved, err)}
	}
	b.reached.Store(true)
	return nil
}

type waiting struct {
	next agent.Runner
	b    *Barrier
}

var _ agent.Runner = (*waiting)(nil)

func (w *waiting) Run(ctx context.Context, req *agent.Request) *agent.Result {
	if res := w.b.pass(); res != nil {
		return res
	}
	return w.next.Run(ctx, req)
}
