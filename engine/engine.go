// Package engine runs an ensemble: turn after turn it asks the resolver which
// agents are ready, plans their executions, runs those concurrently through a
// runner, and commits their results to the ConversationState when the turn
// ends (docs/semantics.md). A turn flows resolve → plan → execute → commit
// (plan.go, execute.go, commit.go); only the committer writes the state.
//
// A Run can be driven whole (Run.Run) or one turn at a time (Run.Step), and
// its state can be saved after any completed turn and resumed from it.
//
// Part of the public API (go doc github.com/ensemble-run/ensemble).
package engine

import (
	"context"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/ensemble-run/ensemble/agent"
	"github.com/ensemble-run/ensemble/ensemble"
	"github.com/ensemble-run/ensemble/events"
	"github.com/ensemble-run/ensemble/internal/resolver"
	"github.com/ensemble-run/ensemble/internal/tracing"
	"github.com/ensemble-run/ensemble/state"
)

// Completion reasons (docs/semantics.md#end-of-a-run-and-exit-codes).
const (
	Completed     = "completed"
	MaxTotalTurns = "max_total_turns"
	Timeout       = "timeout"
	Cancelled     = "cancelled"
)

// Options tune a run. Zero values take the ensemble's limits.
type Options struct {
	// Runner executes agents; required.
	Runner agent.Runner
	// MaxTurns, Timeout and Parallel override conversation_limits when > 0.
	MaxTurns int
	Timeout  time.Duration
	Parallel int
	// Slots are the parallel budget the run shares with the tree it is
	// part of (ChildOptions lends a child its parent's); nil: a budget of
	// its own, of the run's parallel limit.
	Slots *agent.Slots
	// Events receives the run's events; may be nil. It is called from
	// several goroutines at once.
	Events events.Sink
	// AfterTurn is called with the state after every committed turn (to
	// save it). An error stops the run.
	AfterTurn func(*state.State) error
	// Secrets are redacted from the run's input and from what every
	// execution returns (output, input data, error, stderr, memory) before
	// the engine records it: the state, the result and the events never
	// hold a key, not even cut short in a preview. nil redacts nothing.
	Secrets *agent.Redactor
	// Recording, Tools and Answers are lent to every execution, with the
	// runner, the secrets and the tracer, as its agent.Services: the run's
	// recording (--record, --replay), its MCP servers, and the answers
	// given to a run that waits for a person.
	Recording agent.Recording
	Tools     agent.ToolServers
	Answers   *agent.Answers
	// Budget overrides the caps of conversation_limits: each field that is
	// set replaces the file's (docs/semantics.md#budgets).
	Budget *ensemble.Budget
	// Parent is the budget of the execution this run belongs to (a child
	// ensemble's run, docs/semantics.md#ensembles-of-ensembles): each model
	// request of the run reserves there too, so the parent's caps and its
	// agent's budget bind the child, and a refusal there stops the child
	// as its own would. nil for a top-level run.
	Parent agent.Budget
	// Tracer, when set, makes spans of the run, its turns, its executions
	// and of what the kinds do in them (docs/tracing.md), each under the
	// span of the context it starts in. nil traces nothing.
	Tracer trace.Tracer
	// TraceContent records the run's input, the executions' outputs and
	// what the kinds exchange with models and tools in the spans, redacted
	// of Secrets.
	TraceContent bool
	// RunID is the run's id (in a state database), recorded in its spans.
	RunID string
	// Executor, when set, runs each turn's executions instead of this
	// process's goroutines: a durable engine runs each as an activity of
	// its workflow (docs/temporal.md). nil runs them here.
	Executor Executor
	// Clock, when set, is the time that decides the run's timeout and the
	// durations it reports, instead of the system clock: a workflow's clock,
	// which replays the same. The run's timeout is then checked between
	// turns and after each turn's executions, not by a deadline.
	Clock func() time.Time
	// Started is when the run started, on Clock, for a run continued from
	// its state by a durable engine; zero starts it at its first Step.
	Started time.Time
	// Expect are the expectations the run checks over its final state
	// when it completes (docs/semantics.md#expectations): a session gives
	// the file's expect: and the command's --expect. nil checks none (a
	// child ensemble's run).
	Expect []*ensemble.Expectation
	// Strict ends the run, StrictWarning, on a read of a missing key or a
	// null message (state.Warning.Strict): before the turn whose
	// resolution or planning read it runs, or after the turn whose
	// execution did (a loop's until and carry)
	// (docs/semantics.md#reads-of-missing-keys).
	Strict bool
}

// Executor runs a turn's executions (docs/development.md#how-a-turn-flows)
// somewhere else than in the run's goroutines. Execute returns one result per
// request, in order, once all have returned; nil for one that never started.
// A request's Budget is nil: the executor's runs are not capped mid-turn.
type Executor interface {
	Execute(ctx context.Context, reqs []*agent.Request, parallel int) []*agent.Result
}

// Run is one run of an ensemble.
type Run struct {
	ens  *ensemble.Ensemble
	opts Options
	st   *state.State // read here; written only by the committer
	res  *resolver.Resolver
	// committer is the one writer of st.
	committer *committer

	maxTurns int
	parallel int
	timeout  time.Duration

	started     time.Time
	interrupted []RunError // executions of a turn that was cut short: never committed
	// interruptedUsage is what those executions spent: the requests were
	// made and paid for even though their outputs were discarded.
	interruptedUsage state.Usage
	// pendingInput are the questions the run ended waiting for (suspend.go).
	pendingInput []PendingInput
	// budget keeps the spend and refuses requests past its caps (budget.go).
	budget *budget
	// interruptedByAgent is interruptedUsage per agent.
	interruptedByAgent map[string]*state.Usage
	// tr and span: the tracer and the run's span, nil when tracing is off
	// (trace.go).
	tr   *tracing.Tracer
	span trace.Span
	// services are what every execution is lent (Request.Services).
	services agent.Services
	// slots: the tree's parallel budget (Options.Slots).
	slots *agent.Slots
	// expectations are the run's expectations as its completion checked
	// them (expect.go), saved with it (Stopped).
	expectations []Expectation
	// savedDeadlines are those of the run it goes on from (FromFile),
	// deadlines those of the questions it ends waiting for (deadline.go).
	savedDeadlines, deadlines []state.Deadline
}

// New prepares a run of e with the given input ("" takes the file's input).
func New(e *ensemble.Ensemble, input string, opts Options) *Run {
	if input == "" {
		input = e.Input
	}
	return Resume(e, state.New(opts.Secrets.String(input)), opts)
}

// Resume prepares a run that continues from st, a state saved after a
// completed turn.
func Resume(e *ensemble.Ensemble, st *state.State, opts Options) *Run {
	r := &Run{ens: e, opts: opts, st: st, res: resolver.New(e)}
	r.committer = newCommitter(e, st, &r.opts.Events, opts.Secrets)
	r.committer.now = r.now
	r.budget = newBudget(e, opts.Budget, st, opts.Events)
	r.budget.parent = opts.Parent
	r.maxTurns = pick(opts.MaxTurns, e.Limits.MaxTotalTurns, ensemble.DefaultMaxTotalTurns)
	r.parallel = pick(opts.Parallel, e.Limits.ParallelAgentLimit, ensemble.DefaultParallelAgentLimit)
	r.slots = opts.Slots
	if r.slots == nil {
		r.slots = agent.NewSlots(r.parallel)
	}
	r.timeout = time.Duration(pick(int64(opts.Timeout), int64(e.Limits.Timeout), int64(ensemble.DefaultTimeout)))
	if opts.Tracer != nil {
		r.tr = &tracing.Tracer{Tracer: opts.Tracer, Content: opts.TraceContent, Secrets: opts.Secrets}
	}
	r.services = agent.Services{Runner: opts.Runner, Secrets: opts.Secrets, Recording: opts.Recording,
		Tools: opts.Tools, Tracer: r.tr, Answers: opts.Answers}
	return r
}

// ChildOptions are the options of a run that an execution of req makes (a
// child ensemble's, docs/semantics.md#ensembles-of-ensembles): it runs its
// agents with runner, and shares the services of req's run (its secrets,
// recording, MCP servers and tracer, not its answers, which are the
// parent's agents'); req's budget binds its model requests, and the slot
// req's execution holds is lent to it from the tree's parallel budget.
func ChildOptions(req *agent.Request, runner agent.Runner) Options {
	s := req.Services
	o := Options{Runner: runner, Secrets: s.Secrets, Recording: s.Recording, Tools: s.Tools, Parent: req.Budget}
	if req.Slots != nil {
		o.Slots = req.Slots.Lend()
	}
	if s.Tracer != nil {
		o.Tracer, o.TraceContent = s.Tracer.Tracer, s.Tracer.Content
	}
	return o
}

func pick[T int | int64](vs ...T) T {
	for _, v := range vs {
		if v > 0 {
			return v
		}
	}
	return 0
}

// Timeout is the run's timeout: Options.Timeout, the ensemble's, or the default.
func (r *Run) Timeout() time.Duration { return r.timeout }

// State is the run's state; read it only between turns.
func (r *Run) State() *state.State { return r.st }

// Run drives the run to its end and returns the result. The run timeout
// starts now; a cancelled ctx ends the run as "cancelled".
func (r *Run) Run(ctx context.Context) *Result {
	r.start(ctx)
	if r.opts.Clock != nil {
		reason := ""
		for reason == "" {
			reason = r.step(ctx, ctx)
		}
		return r.finish(reason)
	}
	runCtx, cancel := context.WithTimeout(ctx, r.timeout)
	defer cancel()
	reason := ""
	for reason == "" {
		reason = r.step(ctx, runCtx)
	}
	return r.finish(reason)
}

// Step runs one turn. It returns the completion reason when the run has
// ended (nothing was ready, or a limit was hit) and "" when another turn may
// follow. Each Step is bounded by what is left of the run's timeout.
func (r *Run) Step(ctx context.Context) string {
	r.start(ctx)
	if r.opts.Clock != nil {
		return r.step(ctx, ctx)
	}
	left := r.timeout - time.Since(r.started)
	runCtx, cancel := context.WithTimeout(ctx, left)
	defer cancel()
	return r.step(ctx, runCtx)
}

// Result builds the result of the run so far with the given reason.
func (r *Run) Result(reason string) *Result { return r.finish(reason) }

func (r *Run) start(ctx context.Context) {
	if r.started.IsZero() {
		r.started = r.now()
		if !r.opts.Started.IsZero() {
			r.started = r.opts.Started
		}
		r.startTrace(ctx)
		// Turn is the turns already completed: 0 for a new run, the saved
		// turn count for a resumed one (whose events start after it).
		r.opts.Events.Emit(events.Event{Type: events.RunStarted, Turn: r.st.TurnCount, Message: r.st.Input})
	}
}

// step runs one turn; parent is the caller's context (its cancellation means
// SIGINT), runCtx adds the run's deadline.
func (r *Run) step(parent, runCtx context.Context) string {
	if reason := r.stopReason(parent, runCtx); reason != "" {
		return reason
	}
	st := r.st
	ready, warns, err := r.res.Ready(runCtx, st)
	if err != nil {
		// Interrupted while evaluating conditions: runCtx is done.
		if reason := r.stopReason(parent, runCtx); reason != "" {
			return reason
		}
		return Cancelled
	}
	r.committer.warn(st.TurnCount+1, warns)
	if r.opts.Strict && r.committer.strict {
		return StrictWarning
	}
	if len(ready) == 0 {
		return Completed
	}
	if st.TurnCount >= r.maxTurns {
		return MaxTotalTurns
	}
	turn := st.TurnCount + 1
	r.emitTurnStarted(turn, ready)
	turnStart := r.now()
	var turnSpan trace.Span
	if r.span != nil {
		names := make([]string, len(ready))
		for i, rd := range ready {
			names[i] = rd.Agent.Name
		}
		runCtx, turnSpan = r.startTurn(runCtx, turn, names)
		defer turnSpan.End()
	}

	p := r.plan(runCtx, turn, ready)
	for _, w := range p.notes.warnings {
		r.committer.record(turn, w)
	}
	if r.opts.Strict && r.committer.strict {
		// Nothing of the turn runs: no agent is given what was built
		// on the missing key.
		if turnSpan != nil {
			tracing.Fail(turnSpan, "not run: --strict and a warning")
		}
		return StrictWarning
	}
	turnCtx, cancelTurn := runCtx, context.CancelCauseFunc(nil)
	if r.budget.active() {
		// A spent budget cancels the turn's executions: the turn has a
		// context of its own (a run without a budget does without).
		turnCtx, cancelTurn = context.WithCancelCause(runCtx)
	}
	r.budget.startTurn(turn, cancelTurn)
	r.execute(turnCtx, p.execs)
	if cancelTurn != nil {
		cancelTurn(nil)
	}
	reason := r.stopReason(parent, runCtx)
	if reason == "" && r.budget.exceeded() != nil {
		reason = BudgetExceeded
	}
	if reason != "" {
		why := r.reportInterrupted(turn, reason, p.execs)
		if turnSpan != nil {
			tracing.Fail(turnSpan, "not committed: "+why)
		}
		return reason
	}
	waiting := suspend(&p) // ask agents that wait for an answer (suspend.go)
	if len(p.ready) == 0 {
		return r.awaitInput(waiting) // nothing else ran: the turn is not committed
	}
	r.committer.commit(turn, &p)
	r.opts.Events.Emit(events.Event{Type: events.TurnCompleted, Turn: turn, Duration: r.now().Sub(turnStart).Seconds()})
	if r.opts.AfterTurn != nil {
		if err := r.opts.AfterTurn(st); err != nil {
			r.interrupted = append(r.interrupted, RunError{TurnNumber: turn, Message: "saving the state: " + err.Error()})
			return Cancelled
		}
	}
	if len(waiting) > 0 {
		return r.awaitInput(waiting)
	}
	if r.opts.Strict && r.committer.strict {
		return StrictWarning // a loop's until or carry, as its agent ran
	}
	return ""
}

// emitTurnStarted says which agents the turn runs (a skipped agent does
// not run: agent_skipped says so).
func (r *Run) emitTurnStarted(turn int, ready []resolver.Ready) {
	if r.opts.Events == nil {
		return
	}
	names := make([]string, 0, len(ready))
	for _, rd := range ready {
		if rd.Skip == resolver.Run {
			names = append(names, rd.Agent.Name)
		}
	}
	r.opts.Events.Emit(events.Event{Type: events.TurnStarted, Turn: turn, Agents: names})
}

// reportInterrupted reports the executions of a turn cut short for
// reason, and returns why in words. Nothing of the turn is committed, so a
// resumed run plays it again: its executions are reported, not recorded.
func (r *Run) reportInterrupted(turn int, reason string, execs []execution) string {
	why := "the run was interrupted"
	switch reason {
	case Timeout:
		why = "the run reached its timeout"
	case BudgetExceeded:
		why = "the run's budget was exceeded (" + r.budget.exceeded().Error() + ")"
	}
	var fan *fanInterrupted
	for _, x := range execs {
		msg := "stopped before it finished: " + why
		if x.res != nil {
			r.interruptedUsage.Add(x.res.Usage)
			r.addInterruptedUsage(x.req.Agent.Name, x.res.Usage)
		}
		if x.gate != nil {
			// A fan-out's instances are reported together: one error
			// for the agent, not one for each of a million items.
			if fan == nil || fan.gate != x.gate {
				r.interrupted = fan.report(r.interrupted, turn, why)
				fan = &fanInterrupted{gate: x.gate, agent: x.req.Agent.Name, count: x.req.Instance.Count}
			}
			fan.add(&x)
			continue
		}
		switch {
		case x.res != nil && x.res.Err == nil:
			msg = "finished, but " + why + " before its turn ended, so its output was discarded"
		case x.res != nil && x.ownEnd:
			// It failed on its own (its own timeout, a script's exit):
			// that failure, not the stop, is what the user must see.
			msg = "failed: " + x.res.Err.Error() + " (then " + why + " before its turn ended)"
		}
		r.interrupted = append(r.interrupted, RunError{TurnNumber: turn, AgentName: eventName(x.req), Message: msg})
	}
	r.interrupted = fan.report(r.interrupted, turn, why)
	return why
}

func stopReason(parent, runCtx context.Context) string {
	switch {
	case parent.Err() != nil:
		return Cancelled
	case runCtx.Err() != nil:
		return Timeout
	}
	return ""
}

// stopReason is stopReason, plus the run's timeout on its Clock when it has
// one (then runCtx carries no deadline).
func (r *Run) stopReason(parent, runCtx context.Context) string {
	reason := stopReason(parent, runCtx)
	if reason == "" && r.opts.Clock != nil && r.opts.Clock().Sub(r.started) >= r.timeout {
		return Timeout
	}
	return reason
}

// now is the run's clock: Options.Clock, or the system's.
func (r *Run) now() time.Time {
	if r.opts.Clock != nil {
		return r.opts.Clock()
	}
	return time.Now()
}
