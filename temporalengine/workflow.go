//go:build !notemporal

package temporalengine

import (
	"bytes"
	"context"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/ensemble-run/ensemble/agent"
	"github.com/ensemble-run/ensemble/engine"
	"github.com/ensemble-run/ensemble/ensemble"
	"github.com/ensemble-run/ensemble/events"
	"github.com/ensemble-run/ensemble/state"
)

// Workflows are the workflows a worker registers: one, the run of an
// ensemble.
type Workflows struct{ Env *Env }

// activityMargin is what an activity's timeouts leave beyond the agent's
// own timeout, for the worker to report the result.
const activityMargin = time.Minute

// Run is the turn loop of docs/development.md#how-a-turn-flows in a
// workflow: the engine plays each turn with the workflow's clock, and runs
// the turn's executions as activities. The run's events are kept for
// EventsQuery, its state answers StateQuery, answers arrive by AnswerSignal,
// and every TurnsPerRun turns the run continues as new with its state.
func (w *Workflows) Run(ctx workflow.Context, in RunInput) (*RunOutput, error) {
	f, err := w.Env.load(in.Path, in.SHA256, in.Profiles)
	if err != nil {
		return nil, temporal.NewNonRetryableApplicationError(err.Error(), "ensemble_file", err)
	}
	e := f.e
	if err := Supported(e); err != nil {
		return nil, temporal.NewNonRetryableApplicationError(err.Error(), "unsupported", err)
	}
	begun := workflow.Now(ctx).Add(-in.Elapsed)
	answers := in.Answers
	if answers == nil {
		answers = map[string]string{}
	}
	var log []events.Event
	done := false
	ex := &executor{ctx: ctx, in: &in, answers: answers, timedOut: map[string]time.Time{}}
	// No Secrets here: what the workflow holds must not depend on the
	// environment of the worker that replays it. Each activity redacts what
	// its execution returns with its own worker's keys, and the client
	// redacts the input before it starts the run.
	opts := engine.Options{
		MaxTurns: in.MaxTurns, Timeout: in.Timeout, Parallel: in.Parallel,
		Executor: ex,
		Clock:    func() time.Time { return workflow.Now(ctx) },
		// The run started when its first workflow run did, not when this
		// one (after a continue-as-new) did.
		Started: begun,
		Events:  func(ev events.Event) { log = append(log, ev) },
		// The file's expect: (a pure function of the final state: it
		// replays the same).
		Expect: e.Expect,
	}
	r, err := newRun(e, in, opts)
	if err != nil {
		return nil, err
	}
	ex.deadline = begun.Add(r.Timeout())
	reason := ""
	if err := workflow.SetQueryHandler(ctx, StateQuery, stateQuery(&r, &reason)); err != nil {
		return nil, err
	}
	if err := workflow.SetQueryHandler(ctx, EventsQuery, eventsQuery(in.EventBase, &log, &done)); err != nil {
		return nil, err
	}
	answerCh := workflow.GetSignalChannel(ctx, AnswerSignal)
	take := func() {
		var a Answer
		for answerCh.ReceiveAsync(&a) {
			answers[a.Agent] = a.Text
		}
	}
	bg := context.Background()
	turns := 0
	for {
		take()
		reason = r.Step(bg)
		if reason == engine.AwaitingInput {
			// Wait for an answer to any of the questions, or for the
			// first of their deadlines, then play the turn again: an
			// agent still unanswered waits again, one whose deadline
			// passed applies its on_timeout.
			deadlines := standing(r)
			waitForAnswer(ctx, answerCh, r.PendingInput(), answers, deadlines, ex.timedOut)
			// Go on as a resumed local run does: from the state, with a
			// fresh timeout (the wait, days maybe, is not the run's time),
			// the questions keeping their deadlines.
			begun = workflow.Now(ctx)
			opts.Started = begun
			r = engine.FromFile(e, withDeadlines(r.File(""), deadlines), opts)
			ex.deadline = begun.Add(r.Timeout())
			reason = ""
			continue
		}
		if reason != "" {
			break
		}
		turns++
		per := in.TurnsPerRun
		if per <= 0 {
			per = DefaultTurnsPerRun
		}
		if turns >= per {
			take()
			return nil, continueAsNew(ctx, in, r, workflow.Now(ctx).Sub(begun), answers, len(log))
		}
	}
	res := r.Result(reason)
	done = true
	var buf bytes.Buffer
	if err := res.WriteJSON(&buf); err != nil {
		return nil, err
	}
	return &RunOutput{Result: buf.Bytes(), ExitCode: res.ExitCode(), Events: log, EventBase: in.EventBase}, nil
}

// stateQuery answers StateQuery with the run's state as it stands (*r,
// which the workflow replaces as it goes on after an answer).
func stateQuery(r **engine.Run, reason *string) func() ([]byte, error) {
	return func() ([]byte, error) {
		f := (*r).File(*reason)
		if *reason != "" {
			// What a local run saves as it ends or waits: what it
			// reported of the turn it cut short (engine.Run.Stopped).
			f.Stopped = (*r).Stopped()
		}
		return state.Marshal(f)
	}
}

// eventsQuery answers EventsQuery with the events of log from a number on;
// base is the number of log's first event.
func eventsQuery(base int, log *[]events.Event, done *bool) func(int) (EventsPage, error) {
	return func(from int) (EventsPage, error) {
		i := max(from-base, 0)
		if i > len(*log) {
			i = len(*log)
		}
		return EventsPage{From: base + i, Events: (*log)[i:], Done: *done}, nil
	}
}

// newRun is the engine's run of e: from the state a continued workflow
// run was given, or from the input.
func newRun(e *ensemble.Ensemble, in RunInput, opts engine.Options) (*engine.Run, error) {
	if len(in.State) == 0 {
		return engine.New(e, in.Input, opts), nil
	}
	sf, err := state.Parse(in.State)
	if err != nil {
		return nil, temporal.NewNonRetryableApplicationError("the continued state: "+err.Error(), "state", err)
	}
	return engine.FromFile(e, sf, opts), nil
}

// waitForAnswer receives answers until one of the pending questions has
// one, or until the first of their deadlines (an ask agent's timeout:,
// docs/semantics.md#answers-that-time-out): the questions unanswered by
// then go into timedOut with their deadline, for their agents' next
// executions to apply their on_timeout.
func waitForAnswer(ctx workflow.Context, answerCh workflow.ReceiveChannel, pending []engine.PendingInput, answers map[string]string,
	deadlines []state.Deadline, timedOut map[string]time.Time) {
	waits := map[string]bool{}
	for _, p := range pending {
		waits[p.Agent] = true
	}
	answered := func() bool {
		for a := range waits {
			if _, ok := answers[a]; ok {
				return true
			}
		}
		return false
	}
	var first time.Time
	for _, d := range deadlines {
		if waits[d.Agent] && (first.IsZero() || d.At.Before(first)) {
			first = d.At
		}
	}
	// Workflows started before questions had deadlines here waited on the
	// signal alone: their histories replay without the timer.
	if !first.IsZero() && workflow.GetVersion(ctx, "ask-deadlines", workflow.DefaultVersion, 1) == workflow.DefaultVersion {
		first = time.Time{}
	}
	if first.IsZero() {
		for !answered() {
			var a Answer
			answerCh.Receive(ctx, &a)
			answers[a.Agent] = a.Text
		}
		return
	}
	tctx, cancel := workflow.WithCancel(ctx)
	defer cancel()
	expired := false
	sel := workflow.NewSelector(ctx)
	sel.AddReceive(answerCh, func(c workflow.ReceiveChannel, _ bool) {
		var a Answer
		c.Receive(ctx, &a)
		answers[a.Agent] = a.Text
	})
	sel.AddFuture(workflow.NewTimer(tctx, max(first.Sub(workflow.Now(ctx)), 0)), func(workflow.Future) { expired = true })
	for !answered() && !expired {
		sel.Select(ctx)
	}
	if answered() {
		return
	}
	now := workflow.Now(ctx)
	for _, d := range deadlines {
		if _, ok := answers[d.Agent]; waits[d.Agent] && !ok && !now.Before(d.At) {
			timedOut[d.Agent] = d.At
		}
	}
}

// standing are the deadlines of the questions run r waits for (or went
// on with, still standing).
func standing(r *engine.Run) []state.Deadline {
	if s := r.Stopped(); s != nil {
		return s.Deadlines
	}
	return nil
}

// withDeadlines is f with the deadlines its questions keep when the run
// goes on from it.
func withDeadlines(f *state.File, ds []state.Deadline) *state.File {
	if len(ds) > 0 {
		f.Stopped = &state.Stopped{Deadlines: ds}
	}
	return f
}

// continueAsNew is the error that goes on with the run in a new workflow
// run, from its state: elapsed is the run's time so far, events how many
// events it has emitted.
func continueAsNew(ctx workflow.Context, in RunInput, r *engine.Run, elapsed time.Duration, answers map[string]string, events int) error {
	data, err := state.Marshal(withDeadlines(r.File(""), standing(r)))
	if err != nil {
		return err
	}
	next := in
	next.State, next.Elapsed, next.Answers = data, elapsed, answers
	next.EventBase = in.EventBase + events
	return workflow.NewContinueAsNewError(ctx, WorkflowName, next)
}

// executor runs a turn's executions as activities, at most parallel at
// once, in the order planned; the run's deadline cancels those still
// running.
type executor struct {
	ctx     workflow.Context
	in      *RunInput
	answers map[string]string
	// timedOut are the ask agents whose question's deadline passed with
	// no answer, with that deadline (waitForAnswer).
	timedOut map[string]time.Time
	deadline time.Time
}

func (x *executor) Execute(_ context.Context, reqs []*agent.Request, parallel int) []*agent.Result {
	ctx, cancel := workflow.WithCancel(x.ctx)
	defer cancel()
	results := make([]*agent.Result, len(reqs))
	left := x.deadline.Sub(workflow.Now(ctx))
	if left <= 0 {
		return results
	}
	sel := workflow.NewSelector(ctx)
	timedOut := false
	sel.AddFuture(workflow.NewTimer(ctx, left), func(workflow.Future) { timedOut = true })
	running, finished := 0, 0
	// A fan-out's instances run at most its max_parallel at once, and
	// start in item order (docs/semantics.md#fan-out), as in a local run.
	fanRunning := map[string]int{}
	fanLimit := func(req *agent.Request) int {
		if req.Instance == nil || req.Agent.FanOut == nil {
			return 0
		}
		return req.Agent.FanOut.MaxParallel
	}
	start := func(i int) {
		req := reqs[i]
		if fanLimit(req) > 0 {
			fanRunning[req.Agent.Name]++
		}
		in := ExecInput{
			Path: x.in.Path, SHA256: x.in.SHA256, Responses: x.in.Responses, Profiles: x.in.Profiles,
			Live: x.in.Live, LiveAll: x.in.LiveAll, Batch: x.in.Batch,
			Agent: req.Agent.Name, Input: req.Input, Turn: req.Turn, Execution: req.Execution,
			Dependencies: req.Dependencies, Fresh: req.Fresh, Context: req.Context,
			RequestParameters: req.RequestParameters, Memory: req.Memory, Instance: req.Instance,
			Templates: req.Templates,
		}
		if a, ok := x.answers[req.Agent.Name]; ok && req.Instance == nil {
			in.Answer = &a // an answer that came as the deadline passed wins
			delete(x.timedOut, req.Agent.Name)
		} else if at, ok := x.timedOut[req.Agent.Name]; ok && req.Instance == nil {
			in.TimedOut = &at
		}
		close := left + activityMargin
		if t := req.Agent.Timeout; t > 0 && t+activityMargin < close {
			close = t + activityMargin
		}
		actx := workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
			ScheduleToCloseTimeout: left + activityMargin,
			StartToCloseTimeout:    close,
			HeartbeatTimeout:       heartbeatTimeout,
			RetryPolicy:            &temporal.RetryPolicy{InitialInterval: time.Second, MaximumInterval: 30 * time.Second},
		})
		running++
		sel.AddFuture(workflow.ExecuteActivity(actx, ActivityName, in), func(f workflow.Future) {
			running--
			finished++
			if fanLimit(req) > 0 {
				fanRunning[req.Agent.Name]--
			}
			var out ExecOutput
			if err := f.Get(ctx, &out); err != nil {
				results[i] = &agent.Result{Err: err}
				return
			}
			if req.Events != nil {
				for _, ev := range out.Events {
					req.Events(ev)
				}
			}
			results[i] = fromOutput(req, &out)
			if in.Answer != nil && !out.AwaitingInput {
				delete(x.answers, req.Agent.Name) // taken, once
			}
			if in.TimedOut != nil {
				delete(x.timedOut, req.Agent.Name) // applied, once
			}
		})
	}
	if parallel <= 0 {
		parallel = len(reqs)
	}
	started, lo := make([]bool, len(reqs)), 0
	for finished < len(reqs) && !timedOut {
		// Start what may start, in order: an instance whose fan-out is at
		// its max_parallel waits, and the requests after it may go first.
		for lo < len(reqs) && started[lo] {
			lo++
		}
		for i := lo; i < len(reqs) && running < parallel; i++ {
			if started[i] {
				continue
			}
			if l := fanLimit(reqs[i]); l > 0 && fanRunning[reqs[i].Agent.Name] >= l {
				continue
			}
			started[i] = true
			start(i)
		}
		sel.Select(ctx)
	}
	return results
}
