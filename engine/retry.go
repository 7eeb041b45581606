package engine

import (
	"context"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/ensemble-run/ensemble/agent"
	"github.com/ensemble-run/ensemble/events"
	"github.com/ensemble-run/ensemble/internal/barrier"
	"github.com/ensemble-run/ensemble/state"
)

// attempts runs one execution, and runs it again while it fails, up to the
// agent's retry.attempts in all, waiting retry.backoff before the second
// attempt and twice as long before each next one (docs/semantics.md#retries). ctx
// carries the agent's timeout, which bounds every attempt and wait
// together. An execution cancelled (by the timeout, the run or a budget) is
// not tried again, nor one that waits for a person's answer, nor one
// held back because the run's state could not be saved (barrier.ErrNotSaved). Each attempt that fails and is followed by another is
// an agent_retry event. The result is the last attempt's, with the usage
// of every attempt: the requests of the failed ones were made.
func (r *Run) attempts(ctx context.Context, req *agent.Request) *agent.Result {
	rt := req.Agent.Retry
	if rt == nil || rt.Attempts <= 1 {
		return r.opts.Runner.Run(ctx, req)
	}
	var spent state.Usage
	var spentAny bool
	wait := rt.Backoff
	for attempt := 1; ; attempt++ {
		res := safeRun(ctx, r.opts.Runner, req)
		if res.Usage != nil {
			spent.Add(res.Usage)
			spentAny = true
		}
		if res.Err == nil || attempt >= rt.Attempts || ctx.Err() != nil || isBudget(res.Err) || errors.Is(res.Err, agent.ErrAwaitingInput) || errors.Is(res.Err, barrier.ErrNotSaved) {
			if res.Err != nil && attempt > 1 && attempt >= rt.Attempts && ctx.Err() == nil {
				res.Err = fmt.Errorf("%w (after %d attempts)", res.Err, attempt)
			}
			if spentAny {
				u := spent
				res.Usage = &u
			}
			return res
		}
		r.opts.Events.Emit(events.Event{Type: events.AgentRetry, Turn: req.Turn, Agent: eventName(req), Execution: req.Execution,
			Attempt: attempt, Error: r.opts.Secrets.Error(res.Err).Error()})
		if r.span != nil {
			r.traceRetry(ctx, attempt, res.Err)
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			res.Err = fmt.Errorf("%w (retry cut short: attempt %d of %d failed, then the execution was cancelled)", res.Err, attempt, rt.Attempts)
			if spentAny {
				u := spent
				res.Usage = &u
			}
			return res
		case <-t.C:
		}
		wait = nextRetryWait(wait)
	}
}

// nextRetryWait doubles a retry's wait, stopping at the longest duration
// rather than overflowing into a negative one (which would not wait at all).
func nextRetryWait(w time.Duration) time.Duration {
	if w > math.MaxInt64/2 {
		return math.MaxInt64
	}
	return 2 * w
}

// safeRun runs one attempt; a runner that panics or returns nothing fails it.
func safeRun(ctx context.Context, run agent.Runner, req *agent.Request) (res *agent.Result) {
	defer func() {
		if p := recover(); p != nil {
			res = &agent.Result{Err: fmt.Errorf("internal error: %v", p)}
		}
		if res == nil {
			res = &agent.Result{Err: errors.New("internal error: the runner returned no result")}
		}
	}()
	return run.Run(ctx, req)
}
