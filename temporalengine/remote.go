//go:build !notemporal

package temporalengine

import (
	"context"
	"errors"
	"fmt"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"

	"github.com/ensemble-run/ensemble/engine"
	"github.com/ensemble-run/ensemble/ensemble"
	"github.com/ensemble-run/ensemble/events"
	"github.com/ensemble-run/ensemble/serve"
	"github.com/ensemble-run/ensemble/state"
)

// Remote is the Temporal engine as `ensemble serve --temporal` runs its
// runs on it (serve.Engine): each run a workflow of Queue whose id is the
// run's, started as `run --temporal` starts one, answered by the answer
// signal, its events and state read by the queries `run --temporal` and
// `state show --temporal` read. Workers (Serve) run it.
type Remote struct {
	C     client.Client
	Queue string
}

var _ serve.Engine = (*Remote)(nil)

// Name is "Temporal".
func (*Remote) Name() string { return "Temporal" }

// Check is Supported.
func (*Remote) Check(e *ensemble.Ensemble) error { return Supported(e) }

// Start starts run id as a workflow (InputFor). A workflow of that id
// that exists, or existed, is refused, unless r.Again: then it is the run.
func (rm *Remote) Start(ctx context.Context, id string, r serve.RemoteRun) error {
	in, err := InputFor(r.Ensemble, RunInput{Path: r.Ensemble.Path, Input: r.Input, Responses: r.Responses, Profiles: r.Profiles})
	if err != nil {
		return err
	}
	queue := rm.Queue
	if queue == "" {
		queue = DefaultTaskQueue
	}
	_, err = rm.C.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: id, TaskQueue: queue,
		WorkflowIDReusePolicy:                    enumspb.WORKFLOW_ID_REUSE_POLICY_REJECT_DUPLICATE,
		WorkflowExecutionErrorWhenAlreadyStarted: true}, WorkflowName, in)
	var started *serviceerror.WorkflowExecutionAlreadyStarted
	if errors.As(err, &started) {
		if r.Again {
			return nil
		}
		return fmt.Errorf("%w: the cluster has a run %s (another server's?): name another run_id", serve.ErrRunExists, id)
	}
	return err
}

// stateEvery is how many polls without a new event Follow makes before it
// reads the state anyway.
const stateEvery = 5

// Follow reads run id's new events (EventsQuery) every pollEvery, and its
// state (StateQuery) when events came, until the workflow ends (its state
// then read from the closed workflow) or waits for an answer once events
// after from came.
func (rm *Remote) Follow(ctx context.Context, id string, from int, sink events.Sink, progress func(*state.File) error) (*state.File, int, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	run := rm.C.GetWorkflow(ctx, id, "")
	var out RunOutput
	got := make(chan error, 1)
	go func() { got <- run.Get(ctx, &out) }()
	next := from
	emit := func(first int, evs []events.Event) {
		for i, ev := range evs {
			if first+i >= next {
				if ev.Type == events.RunCompleted {
					ev.Result = asResult(ev.Result)
				}
				sink(ev)
				next = first + i + 1
			}
		}
	}
	t := time.NewTicker(pollEvery)
	defer t.Stop()
	idle := 0
	for {
		select {
		case err := <-got:
			if err != nil {
				return nil, next, err
			}
			emit(out.EventBase, out.Events)
			sf, err := QueryState(ctx, rm.C, id)
			return sf, next, err
		case <-t.C:
			before := next
			if v, err := rm.C.QueryWorkflow(ctx, id, "", EventsQuery, next); err == nil {
				var page EventsPage
				if v.Get(&page) == nil {
					emit(page.From, page.Events)
				}
			}
			if idle++; next == before && idle < stateEvery {
				continue
			}
			idle = 0
			sf, err := QueryState(ctx, rm.C, id)
			if err != nil {
				continue // not started yet, or between continue-as-new runs
			}
			if err := progress(sf); err != nil {
				return nil, next, err
			}
			// Before an event after from, an answered run may not have
			// taken its answer yet: it still reads as waiting.
			if sf.CompletionReason == engine.AwaitingInput && next > from {
				return sf, next, nil
			}
		case <-ctx.Done():
			return nil, next, ctx.Err()
		}
	}
}

// Answer sends the answer signal (SendAnswer).
func (rm *Remote) Answer(ctx context.Context, id, agentName, text string) error {
	return SendAnswer(ctx, rm.C, id, agentName, text)
}

// Cancel terminates run id's workflow; one that has ended is left as it
// is.
func (rm *Remote) Cancel(ctx context.Context, id string) error {
	err := rm.C.TerminateWorkflow(ctx, id, "", "cancelled by a caller of ensemble serve")
	var gone *serviceerror.NotFound
	if errors.As(err, &gone) {
		return nil
	}
	return err
}
