//go:build !notemporal

package temporalengine

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"sync"
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"

	"github.com/ensemble-run/ensemble/agent"
	"github.com/ensemble-run/ensemble/events"
	"github.com/ensemble-run/ensemble/session"
)

// heartbeatEvery is how often a running execution tells the server it is
// alive; a worker that stops doing so for heartbeatTimeout is taken as
// lost and the execution is given to another.
const (
	heartbeatEvery   = 5 * time.Second
	heartbeatTimeout = 30 * time.Second
)

// Activities are the activities a worker registers: one, which runs one
// agent execution.
type Activities struct{ Env *Env }

// Execute runs one agent execution as the local engine's executor does, in
// the file's session (session.Session.Execute: the agent's timeout and
// retries, panics caught, secrets redacted, the MCP servers its tools
// name), heartbeating while it runs. An execution that fails is a
// result, not an activity error: only a worker that cannot run it at all
// (a changed file) fails the activity, and then for good.
func (a *Activities) Execute(ctx context.Context, in ExecInput) (*ExecOutput, error) {
	f, err := a.Env.load(in.Path, in.SHA256, in.Profiles)
	if err != nil {
		return nil, temporal.NewNonRetryableApplicationError(err.Error(), "ensemble_file", err)
	}
	ag := f.e.Agent(in.Agent)
	if ag == nil {
		return nil, temporal.NewNonRetryableApplicationError(fmt.Sprintf("no agent %q in %s", in.Agent, in.Path), "ensemble_file", nil)
	}
	var answers map[string]string
	if in.Answer != nil {
		answers = map[string]string{in.Agent: *in.Answer}
	}
	sess, err := a.Env.session(ctx, f, &in)
	if err != nil {
		return nil, temporal.NewNonRetryableApplicationError(err.Error(), "runner", err)
	}
	req := &agent.Request{
		Ensemble: f.e, Agent: ag, Input: in.Input, Turn: in.Turn, Execution: in.Execution,
		Dependencies: in.Dependencies, Fresh: in.Fresh, Context: in.Context,
		RequestParameters: in.RequestParameters, Memory: in.Memory, Instance: in.Instance,
		Templates: in.Templates,
	}
	if req.Dependencies == nil {
		req.Dependencies = map[string]any{}
	}
	var evs []events.Event
	var mu sync.Mutex
	req.Events = func(ev events.Event) { mu.Lock(); evs = append(evs, ev); mu.Unlock() }
	stop := heartbeat(ctx)
	ro := session.RunOptions{Answers: answers}
	if in.TimedOut != nil {
		ro.Deadlines = map[string]agent.Deadline{in.Agent: {At: *in.TimedOut, Passed: true}}
	}
	res := sess.Execute(ctx, req, ro)
	stop()
	if ctx.Err() != nil && activity.IsActivity(ctx) {
		// The worker is stopping or the workflow cancelled the execution:
		// another attempt (on another worker) runs it again.
		return nil, ctx.Err()
	}
	out := toOutput(res)
	mu.Lock()
	out.Events = evs
	mu.Unlock()
	return out, nil
}

// heartbeat records a heartbeat now and every heartbeatEvery until stop.
func heartbeat(ctx context.Context) (stop func()) {
	if !activity.IsActivity(ctx) {
		return func() {}
	}
	activity.RecordHeartbeat(ctx)
	done := make(chan struct{})
	go func() {
		t := time.NewTicker(heartbeatEvery)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-ctx.Done():
				return
			case <-t.C:
				activity.RecordHeartbeat(ctx)
			}
		}
	}()
	return func() { close(done) }
}

func toOutput(res *agent.Result) *ExecOutput {
	out := &ExecOutput{Output: res.Output, InputData: res.InputData, Stderr: res.Stderr, StopReason: res.StopReason,
		Usage: res.Usage, Memory: res.Memory, Details: res.Details}
	if res.Err != nil {
		out.Error = res.Err.Error()
		out.AwaitingInput = errors.Is(res.Err, agent.ErrAwaitingInput)
	}
	return out
}

// fromOutput is the result the engine commits for req. The input data's
// dependencies that came back as they were delivered are the request's own
// values again, which the committer recognises and records by reference
// (docs/cli.md#the-result), as a local run does.
func fromOutput(req *agent.Request, out *ExecOutput) *agent.Result {
	if m, ok := out.InputData.(map[string]any); ok {
		if deps, ok := m["dependencies"].(map[string]any); ok {
			for k, v := range deps {
				if d, ok := req.Dependencies[k]; ok && reflect.DeepEqual(v, d) {
					deps[k] = d
				}
			}
		}
	}
	res := &agent.Result{Output: out.Output, InputData: out.InputData, Stderr: out.Stderr, StopReason: out.StopReason,
		Usage: out.Usage, Memory: out.Memory, Details: out.Details}
	switch {
	case out.AwaitingInput:
		res.Err = agent.ErrAwaitingInput
	case out.Error != "":
		res.Err = errors.New(out.Error)
	}
	return res
}
