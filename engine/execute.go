package engine

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/ensemble-run/ensemble/agent"
	"github.com/ensemble-run/ensemble/ensemble"
	"github.com/ensemble-run/ensemble/events"
	"github.com/ensemble-run/ensemble/internal/secrets"
	"github.com/ensemble-run/ensemble/state"
)

// execute runs a turn's executions concurrently, at most r.parallel at once
// and each holding a slot of the tree's parallel budget (agent.Slots).
// It knows nothing of agents being ready or of the state: each execution
// carries its request, and gets its result, start and duration. An
// execution that has not started when ctx is done keeps a nil result.
func (r *Run) execute(ctx context.Context, execs []execution) {
	if r.opts.Executor != nil {
		r.executeWith(ctx, execs)
		return
	}
	if len(execs) == 1 && execs[0].failed == nil {
		// One execution (every turn of a loop): run it here, without a
		// goroutine, a semaphore or a fresh stack to grow.
		x := &execs[0]
		if ctx.Err() != nil || !x.acquire(ctx) {
			return
		}
		defer x.release()
		give, ok := r.slots.Acquire(ctx)
		if !ok {
			return
		}
		defer give()
		x.req.Slots = r.slots
		x.started = time.Now()
		x.res = r.runOne(ctx, x.req)
		x.took, x.ownEnd = time.Since(x.started), ctx.Err() == nil
		r.finished(x)
		return
	}
	sem := make(chan struct{}, r.parallel)
	var wg sync.WaitGroup
	for i := 0; i < len(execs); i++ {
		x := &execs[i]
		if x.failed != nil {
			r.failPlanned(ctx, x)
			continue
		}
		if g := x.gate; g != nil {
			// A fan-out's instances, one after the other in execs: one
			// goroutine starts them in item order (fanout.go).
			j := i + 1
			for j < len(execs) && execs[j].gate == g {
				j++
			}
			wg.Add(1)
			go func(group []execution) {
				defer wg.Done()
				r.startFan(ctx, group, sem, &wg)
			}(execs[i:j])
			i = j - 1
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			select {
			case sem <- struct{}{}:
			case <-ctx.Done():
				return
			}
			give, ok := r.slots.Acquire(ctx) // the tree's (agent.Slots)
			if !ok {
				<-sem
				return
			}
			r.run(ctx, x, sem, give)
		}()
	}
	wg.Wait()
}

// startFan starts the instances of one fan-out in item order, each once it
// has a place among its fan-out's running instances and one among the
// turn's executions; it stops starting them when ctx ends.
func (r *Run) startFan(ctx context.Context, group []execution, sem chan struct{}, wg *sync.WaitGroup) {
	for i := range group {
		x := &group[i]
		if x.failed != nil && ctx.Err() == nil {
			r.failPlanned(ctx, x) // an instance whose template failed
			continue
		}
		if ctx.Err() != nil || !x.acquire(ctx) {
			return
		}
		select {
		case sem <- struct{}{}:
		case <-ctx.Done():
			x.release()
			return
		}
		give, ok := r.slots.Acquire(ctx) // the tree's (agent.Slots)
		if !ok {
			<-sem
			x.release()
			return
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer x.release()
			r.run(ctx, x, sem, give)
		}()
	}
}

// failPlanned reports x, which failed when it was planned, as run and
// failed, never started.
func (r *Run) failPlanned(ctx context.Context, x *execution) {
	r.opts.Events.Emit(events.Event{Type: events.AgentStarted, Turn: x.req.Turn, Agent: eventName(x.req), Execution: x.req.Execution})
	x.failed = r.opts.Secrets.Error(x.failed)
	x.started, x.res = time.Now(), &agent.Result{Err: x.failed}
	if r.span != nil {
		r.traceFailedPlan(ctx, x)
	}
	r.finished(x)
}

// run runs x, which holds a place in sem and a slot of the tree (given
// back by give), and gives both back.
func (r *Run) run(ctx context.Context, x *execution, sem chan struct{}, give func()) {
	defer func() { <-sem }()
	defer give()
	x.started = time.Now()
	x.req.Slots = r.slots
	x.res = r.runOne(ctx, x.req)
	x.took, x.ownEnd = time.Since(x.started), ctx.Err() == nil
	r.finished(x)
}

// executeWith runs a turn's executions through Options.Executor: each
// request as planned, with no budget (the executor's runs are not capped
// mid-turn); what each returns is redacted as runOne's is. A fan-out's
// instances are given in item order, all at once, under the run's parallel
// limit.
func (r *Run) executeWith(ctx context.Context, execs []execution) {
	var reqs []*agent.Request
	var run []*execution
	now := r.now()
	for i := range execs {
		x := &execs[i]
		r.opts.Events.Emit(events.Event{Type: events.AgentStarted, Turn: x.req.Turn, Agent: eventName(x.req), Execution: x.req.Execution})
		x.started = now
		if x.failed != nil {
			x.failed = r.opts.Secrets.Error(x.failed)
			x.res = &agent.Result{Err: x.failed}
			r.finished(x)
			continue
		}
		reqs, run = append(reqs, x.req), append(run, x)
	}
	if len(reqs) == 0 {
		return
	}
	results := r.opts.Executor.Execute(ctx, reqs, r.parallel)
	end := r.now()
	for i, x := range run {
		if i >= len(results) || results[i] == nil {
			continue
		}
		x.res, x.took = results[i], end.Sub(x.started)
		r.redact(x.res)
		r.finished(x)
	}
}

// Execute runs one execution as a run's executor does: under the agent's
// timeout and retries, a panic failing it, what it returns redacted with
// opts.Secrets; with no budget. A durable engine's activity calls it with the
// request its workflow planned (docs/temporal.md).
func Execute(ctx context.Context, e *ensemble.Ensemble, opts Options, req *agent.Request) *agent.Result {
	return New(e, req.Input, opts).runOne(ctx, req)
}

// runOne runs one execution under the agent's own timeout. A runner that
// panics fails its execution, never the run.
func (r *Run) runOne(ctx context.Context, req *agent.Request) (res *agent.Result) {
	a := req.Agent
	r.opts.Events.Emit(events.Event{Type: events.AgentStarted, Turn: req.Turn, Agent: eventName(req), Execution: req.Execution})
	if r.span != nil {
		// Deferred first, so that it ends the span last: with the result
		// the deferred function below settles (docs/tracing.md).
		var span trace.Span
		ctx, span = r.startExecution(ctx, req)
		defer func() { r.endExecution(span, res) }()
	}
	if a.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeoutCause(ctx, a.Timeout, fmt.Errorf("agent timeout of %s", a.Timeout))
		defer cancel()
	}
	defer func() {
		if p := recover(); p != nil {
			res = &agent.Result{Err: fmt.Errorf("internal error: %v", p)}
		}
		if res == nil {
			res = &agent.Result{Err: errors.New("internal error: the runner returned no result")}
		}
		// Say why the context ended (the agent's own timeout), unless the
		// runner already did.
		if cause := context.Cause(ctx); res.Err != nil && ctx.Err() != nil && cause != ctx.Err() && !errors.Is(res.Err, cause) {
			res.Err = fmt.Errorf("%w (%v)", res.Err, cause)
		}
		r.redact(res)
	}()
	req.Budget = r.budget.forAgent(a.Name)
	req.Services = r.services
	return r.attempts(ctx, req)
}

// redactDetails redacts what a kind recorded of an execution (the records
// of a child ensemble's run among them): its JSON text, where the
// redactor finds a key in either spelling, plain or JSON-escaped.
func redactDetails(sec *secrets.Redactor, d state.Details) {
	for i := range d {
		d[i].Value = sec.Bytes(d[i].Value)
	}
}

// redact removes every key from what an execution returned.
func (r *Run) redact(res *agent.Result) {
	sec := r.opts.Secrets
	if sec.Empty() {
		return
	}
	res.Output, res.InputData = sec.Value(res.Output), sec.Value(res.InputData)
	res.Err, res.Stderr = sec.Error(res.Err), sec.String(res.Stderr)
	redactDetails(sec, res.Details)
	// Memory (an LLM agent's conversation) is not scanned here: it grows
	// with the agent's executions, and everything in it is redacted already:
	// replies and tool results by the LLM runner, the inputs it was given
	// by this function before they reached the state.
}

// finished reports that an execution returned; its outcome is reported when
// the turn commits.
func (r *Run) finished(x *execution) {
	if r.opts.Events == nil {
		return
	}
	req := x.req
	ev := events.Event{Type: events.AgentFinished, Turn: req.Turn, Agent: eventName(req), Execution: req.Execution,
		Duration: x.took.Seconds()}
	if x.res != nil && x.res.Err != nil {
		ev.Error = x.res.Err.Error()
	}
	r.opts.Events.Emit(ev)
}
