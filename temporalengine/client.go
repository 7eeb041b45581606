//go:build !notemporal

package temporalengine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/ensemble-run/ensemble/agent"
	"github.com/ensemble-run/ensemble/engine"
	"github.com/ensemble-run/ensemble/ensemble"
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

// InputFor is in made ready to start a run of e, the ensemble at in.Path:
// its files named by absolute paths (as the workers see them), the
// ensemble file's hash taken, and e refused when a run on Temporal cannot
// run it (Supported).
func InputFor(e *ensemble.Ensemble, in RunInput) (RunInput, error) {
	abs := func(p string) string {
		if a, err := filepath.Abs(p); err == nil && p != "" {
			return a
		}
		return p
	}
	base, err := NewInput(abs(in.Path), in.Input)
	if err != nil {
		return in, err
	}
	if err := Supported(e); err != nil {
		return in, err
	}
	in.Path, in.SHA256, in.Responses = base.Path, base.SHA256, abs(in.Responses)
	in.Profiles = slices.Clone(in.Profiles)
	for i, p := range in.Profiles {
		in.Profiles[i] = abs(p)
	}
	return in, nil
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

// Dial connects to the Temporal cluster's frontend at addr, in namespace;
// with blobs, payloads over 512 KiB go by reference through files in that
// folder (Blobs). The client logs nothing.
func Dial(addr, namespace, blobs string) (client.Client, error) {
	opts := client.Options{HostPort: addr, Namespace: namespace, Logger: quietLogger{}}
	if blobs != "" {
		opts.DataConverter = (&Blobs{Dir: blobs}).DataConverter()
	}
	return client.Dial(opts)
}

// quietLogger keeps the Temporal client's log lines off the terminal.
type quietLogger struct{}

func (quietLogger) Debug(string, ...any) {}
func (quietLogger) Info(string, ...any)  {}
func (quietLogger) Warn(string, ...any)  {}
func (quietLogger) Error(string, ...any) {}

// Decode is the run's result, as a local run has it.
func (out *RunOutput) Decode() (*engine.Result, error) {
	var res engine.Result
	if err := json.Unmarshal(out.Result, &res); err != nil {
		return nil, fmt.Errorf("its result: %w", err)
	}
	return &res, nil
}

// CheckAnswer refuses an answer that no execution of the run id could
// take: for a run that has ended, or for an agent its ensemble (loaded by
// load, from the path and profiles the run was started with) does not have
// as an ask agent; ErrAnswer wraps either. An answer may come before the
// run asks (it is kept for the agent's next execution), so an ask agent
// that is not waiting yet is not refused; nor is any when the file does not
// load here (the workers' copy decides).
func CheckAnswer(ctx context.Context, c client.Client, id, agentName string, load func(path string, profiles []string) (*ensemble.Ensemble, error)) error {
	sf, err := QueryState(ctx, c, id)
	if err != nil {
		return fmt.Errorf("run %s: %w", id, err)
	}
	if r := sf.CompletionReason; r != "" && r != engine.AwaitingInput {
		return fmt.Errorf("%w: run %s has ended (%s): nothing waits for an answer", ErrAnswer, id, r)
	}
	e, err := load(sf.Ensemble.Path, sf.Profiles)
	if err != nil {
		return nil
	}
	var asks []string
	for _, a := range e.Agents {
		if agent.AsksHuman(a) {
			asks = append(asks, a.Name)
		}
	}
	if !slices.Contains(asks, agentName) {
		return fmt.Errorf("%w: run %s: %q is not an ask agent of %s (its ask agents: %s)%s", ErrAnswer, id, agentName, sf.Ensemble.Path,
			strings.Join(asks, ", "), ensemble.Suggest(agentName, asks))
	}
	return nil
}

// ErrAnswer is the error of an answer that no execution could take.
var ErrAnswer = errors.New("no execution takes this answer")

// Run starts in as the workflow id on queue and waits for it to end: sink
// receives its events as they come (Wait). It returns the run's result, as
// a local run has it, and its output (the result JSON, the exit code).
func Run(ctx context.Context, c client.Client, queue, id string, in RunInput, sink events.Sink) (*engine.Result, *RunOutput, error) {
	run, err := Start(ctx, c, queue, id, in)
	if err != nil {
		return nil, nil, fmt.Errorf("starting run %s: %w", id, err)
	}
	out, err := Wait(ctx, c, run, sink)
	if err != nil {
		return nil, nil, fmt.Errorf("run %s: %w", id, err)
	}
	res, err := out.Decode()
	if err != nil {
		return nil, nil, fmt.Errorf("run %s: %w", id, err)
	}
	return res, out, nil
}

// Serve is a worker of queue: it runs the workflows and activities it is
// given, with env, until ctx is done; then it hands back its running
// executions, and env's MCP servers end.
func Serve(ctx context.Context, c client.Client, queue string, env *Env) error {
	w := worker.New(c, queue, worker.Options{})
	Register(w, env)
	defer env.Close()
	stop := make(chan any)
	go func() { <-ctx.Done(); close(stop) }()
	return w.Run(stop)
}
