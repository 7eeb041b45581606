//go:build !notemporal

package temporalengine

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/ensemble-run/ensemble/engine"
	"github.com/ensemble-run/ensemble/events"
	"github.com/ensemble-run/ensemble/state"
)

// Register adds the run workflow and the execution activity to a worker.
func Register(w worker.Registry, env *Env) {
	w.RegisterWorkflowWithOptions((&Workflows{Env: env}).Run, workflow.RegisterOptions{Name: WorkflowName})
	w.RegisterActivityWithOptions((&Activities{Env: env}).Execute, activity.RegisterOptions{Name: ActivityName})
}

// NewInput is the input of a run of the ensemble file at path: its
// sha256 is taken now, and every worker refuses a file that differs.
func NewInput(path, input string) (RunInput, error) {
	sum, err := state.HashFile(path)
	if err != nil {
		return RunInput{}, err
	}
	return RunInput{Path: path, SHA256: sum, Input: input}, nil
}

// Start starts a run as the workflow id (the run's id).
func Start(ctx context.Context, c client.Client, taskQueue, id string, in RunInput) (client.WorkflowRun, error) {
	if taskQueue == "" {
		taskQueue = DefaultTaskQueue
	}
	return c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: id, TaskQueue: taskQueue}, WorkflowName, in)
}

// pollEvery is how often Wait asks a running workflow for its new events.
const pollEvery = 200 * time.Millisecond

// Wait waits for the run to end and returns its output. When sink is not
// nil it receives the run's events in order, as the run goes (read with
// EventsQuery), then those of the end.
func Wait(ctx context.Context, c client.Client, run client.WorkflowRun, sink events.Sink) (*RunOutput, error) {
	next := 0
	emit := func(from int, evs []events.Event) {
		for i, ev := range evs {
			if from+i >= next {
				if ev.Type == events.RunCompleted {
					ev.Result = asResult(ev.Result)
				}
				sink(ev)
				next = from + i + 1
			}
		}
	}
	var out RunOutput
	if sink == nil {
		err := run.Get(ctx, &out)
		return &out, err
	}
	got := make(chan error, 1)
	go func() { got <- run.Get(ctx, &out) }()
	t := time.NewTicker(pollEvery)
	defer t.Stop()
	for {
		select {
		case err := <-got:
			if err != nil {
				return nil, err
			}
			emit(out.EventBase, out.Events)
			return &out, nil
		case <-t.C:
			v, err := c.QueryWorkflow(ctx, run.GetID(), "", EventsQuery, next)
			if err != nil {
				continue // not started yet, or between continue-as-new runs
			}
			var page EventsPage
			if v.Get(&page) == nil {
				emit(page.From, page.Events)
			}
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

// SendAnswer answers the question of agent in run id (AnswerSignal).
func SendAnswer(ctx context.Context, c client.Client, id, agentName, text string) error {
	if agentName == "" {
		return errors.New("no agent named")
	}
	return c.SignalWorkflow(ctx, id, "", AnswerSignal, Answer{Agent: agentName, Text: text})
}

// QueryState is the state file of run id as it stands (StateQuery).
func QueryState(ctx context.Context, c client.Client, id string) (*state.File, error) {
	v, err := c.QueryWorkflow(ctx, id, "", StateQuery)
	if err != nil {
		return nil, err
	}
	var data []byte
	if err := v.Get(&data); err != nil {
		return nil, err
	}
	return state.Parse(data)
}

// asResult is the result a run_completed event carries, as the local
// engine gives it (an *engine.Result), from the JSON it came back as.
func asResult(v any) any {
	b, err := json.Marshal(v)
	if err != nil {
		return v
	}
	var res engine.Result
	if json.Unmarshal(b, &res) != nil {
		return v
	}
	return &res
}
