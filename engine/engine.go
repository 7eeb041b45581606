// Package engine runs an ensemble: turn after turn it asks the resolver which
// agents are ready, runs them concurrently through a runner, and commits
// their outputs to the ConversationState when the turn ends (docs/semantics.md).
//
// A Run can be driven whole (Run.Run) or one turn at a time (Run.Step), and
// its state can be saved after any completed turn and resumed from it.
package engine

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/ensemble-run/ensemble/conditions"
	"github.com/ensemble-run/ensemble/ensemble"
	"github.com/ensemble-run/ensemble/events"
	"github.com/ensemble-run/ensemble/internal/secrets"
	"github.com/ensemble-run/ensemble/resolver"
	"github.com/ensemble-run/ensemble/runners"
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
	Runner runners.Runner
	// MaxTurns, Timeout and Parallel override conversation_limits when > 0.
	MaxTurns int
	Timeout  time.Duration
	Parallel int
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
	Secrets *secrets.Redactor
}

// Run is one run of an ensemble.
type Run struct {
	ens  *ensemble.Ensemble
	opts Options
	st   *state.State
	res  *resolver.Resolver

	maxTurns int
	parallel int
	timeout  time.Duration

	started     time.Time
	interrupted []RunError // executions of a turn that was cut short: never committed
	// interruptedUsage is what those executions spent: the requests were
	// made and paid for even though their outputs were discarded.
	interruptedUsage state.Usage
	seenWarning      map[string]bool
	// lastOutput is, per state key, the execution whose output it holds
	// when that output is long: what a record's input_data refers to
	// instead of copying the output.
	lastOutput map[string]state.OutputRef
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
	r := &Run{ens: e, opts: opts, st: st, res: resolver.New(e), seenWarning: map[string]bool{}}
	r.maxTurns = pick(opts.MaxTurns, e.Limits.MaxTotalTurns, ensemble.DefaultMaxTotalTurns)
	r.parallel = pick(opts.Parallel, e.Limits.ParallelAgentLimit, ensemble.DefaultParallelAgentLimit)
	r.timeout = time.Duration(pick(int64(opts.Timeout), int64(e.Limits.Timeout), int64(ensemble.DefaultTimeout)))
	for _, w := range st.Warnings {
		r.seenWarning[warningKey(w)] = true
	}
	r.lastOutput = map[string]state.OutputRef{}
	for _, rec := range st.History {
		if a := e.Agent(rec.AgentName); a != nil && rec.Error == nil {
			r.noteOutput(a, rec.Execution, rec.OutputData)
		}
	}
	return r
}

func pick[T int | int64](vs ...T) T {
	for _, v := range vs {
		if v > 0 {
			return v
		}
	}
	return 0
}

// State is the run's state; read it only between turns.
func (r *Run) State() *state.State { return r.st }

// Run drives the run to its end and returns the result. The run timeout
// starts now; a cancelled ctx ends the run as "cancelled".
func (r *Run) Run(ctx context.Context) *Result {
	r.start()
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
	r.start()
	left := r.timeout - time.Since(r.started)
	runCtx, cancel := context.WithTimeout(ctx, left)
	defer cancel()
	return r.step(ctx, runCtx)
}

// Result builds the result of the run so far with the given reason.
func (r *Run) Result(reason string) *Result { return r.finish(reason) }

func (r *Run) start() {
	if r.started.IsZero() {
		r.started = time.Now()
		// Turn is the turns already completed: 0 for a new run, the saved
		// turn count for a resumed one (whose events start after it).
		r.opts.Events.Emit(events.Event{Type: events.RunStarted, Turn: r.st.TurnCount, Message: r.st.Input})
	}
}

// step runs one turn; parent is the caller's context (its cancellation means
// SIGINT), runCtx adds the run's deadline.
func (r *Run) step(parent, runCtx context.Context) string {
	if reason := stopReason(parent, runCtx); reason != "" {
		return reason
	}
	st := r.st
	ready, warns, err := r.res.Ready(runCtx, st)
	if err != nil {
		// Interrupted while evaluating conditions: runCtx is done.
		if reason := stopReason(parent, runCtx); reason != "" {
			return reason
		}
		return Cancelled
	}
	r.warn(st.TurnCount+1, warns)
	if len(ready) == 0 {
		return Completed
	}
	if st.TurnCount >= r.maxTurns {
		return MaxTotalTurns
	}
	turn := st.TurnCount + 1
	names := make([]string, len(ready))
	for i, rd := range ready {
		names[i] = rd.Agent.Name
	}
	r.opts.Events.Emit(events.Event{Type: events.TurnStarted, Turn: turn, Agents: names})
	turnStart := time.Now()

	outcomes := r.execute(runCtx, turn, ready)
	if reason := stopReason(parent, runCtx); reason != "" {
		// The turn was cut short: nothing of it is committed, so a resumed
		// run plays it again. Its executions are reported, not recorded.
		why := "the run was interrupted"
		if reason == Timeout {
			why = "the run reached its timeout"
		}
		for i, o := range outcomes {
			msg := "stopped before it finished: " + why
			if o.res != nil {
				r.interruptedUsage.Add(o.res.Usage)
			}
			if o.res != nil && o.res.Err == nil {
				msg = "finished, but " + why + " before its turn ended, so its output was discarded"
			}
			r.interrupted = append(r.interrupted, RunError{TurnNumber: turn, AgentName: ready[i].Agent.Name, Message: msg})
		}
		return reason
	}
	r.commit(turn, ready, outcomes)
	r.opts.Events.Emit(events.Event{Type: events.TurnCompleted, Turn: turn, Duration: time.Since(turnStart).Seconds()})
	if r.opts.AfterTurn != nil {
		if err := r.opts.AfterTurn(st); err != nil {
			r.interrupted = append(r.interrupted, RunError{TurnNumber: turn, Message: "saving the state: " + err.Error()})
			return Cancelled
		}
	}
	return ""
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

func warningKey(w state.Warning) string {
	return w.AgentName + "\x00" + w.Dependency + "\x00" + w.Message
}

// warn records run-time condition failures, each distinct one once.
func (r *Run) warn(turn int, warns []resolver.Warning) {
	for _, w := range warns {
		sw := state.Warning{TurnNumber: turn, AgentName: w.Agent, Dependency: w.Dependency, Expression: w.Expression,
			Message: fmt.Sprintf("condition of %s ← %s (%s) failed, counted as false: %s", w.Agent, w.Dependency, w.Expression, w.Message)}
		if k := warningKey(sw); !r.seenWarning[k] {
			r.seenWarning[k] = true
			r.st.Warnings = append(r.st.Warnings, sw)
			r.opts.Events.Emit(events.Event{Type: events.Warning, Turn: turn, Agent: w.Agent, Message: sw.Message})
		}
	}
}

type outcome struct {
	req     *runners.Request
	refs    map[string]state.OutputRef // the executions behind req.Dependencies
	handles []state.ExecutionRef       // the failures delivered through failure edges
	res     *runners.Result
	started time.Time
	took    time.Duration
}

// execute runs the ready agents concurrently, at most r.parallel at once.
// Every request sees the state as it was at the start of the turn.
func (r *Run) execute(ctx context.Context, turn int, ready []resolver.Ready) []outcome {
	out := make([]outcome, len(ready))
	sem := make(chan struct{}, r.parallel)
	var wg sync.WaitGroup
	for i := range ready {
		req, refs, handles, err := r.request(ctx, turn, ready[i])
		out[i].req, out[i].refs, out[i].handles = req, refs, handles
		if err != nil {
			// A select failed: the execution fails without running.
			r.opts.Events.Emit(events.Event{Type: events.AgentStarted, Turn: turn, Agent: req.Agent.Name, Execution: req.Execution})
			out[i].started = time.Now()
			out[i].res = &runners.Result{Err: err}
			r.finished(req, out[i])
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
			defer func() { <-sem }()
			out[i].started = time.Now()
			out[i].res = r.runOne(ctx, req)
			out[i].took = time.Since(out[i].started)
			r.finished(req, out[i])
		}()
	}
	wg.Wait()
	return out
}

// request builds what an execution is given. The error is a dependency's
// select that failed: the execution fails with it, without running.
func (r *Run) request(ctx context.Context, turn int, rd resolver.Ready) (*runners.Request, map[string]state.OutputRef, []state.ExecutionRef, error) {
	st, a := r.st, rd.Agent
	deps := make(map[string]any, len(rd.Satisfied))
	var refs map[string]state.OutputRef
	var handles []state.ExecutionRef
	var selErr error
	edges := a.Dependencies // Satisfied is in their order
	for _, d := range rd.Satisfied {
		key := r.ens.Agent(d).StateKey()
		deps[d] = st.AccumulatedContext[key]
		for len(edges) > 0 && edges[0].AgentName != d {
			edges = edges[1:]
		}
		failureEdge := len(edges) > 0 && edges[0].OnFailure
		if failureEdge {
			// A failure edge delivers the dependency's latest failure.
			if f := st.LastFailure(d); f != nil {
				deps[d] = map[string]any{"error": deref(f.Error), "agent": d, "execution": float64(f.Execution)}
				handles = append(handles, state.ExecutionRef{AgentName: d, Execution: f.Execution})
			}
		}
		if len(edges) > 0 && edges[0].SelectProgram != nil {
			v, err := edges[0].SelectProgram.EvalContext(ctx, selectEnv(st, edges[0].SelectProgram.UsesHistory), deps[d])
			if err != nil && selErr == nil {
				selErr = fmt.Errorf("select of dependency %q (%s) failed: %w", d, edges[0].Select, err)
			}
			deps[d] = v
			continue // what was delivered is not the output: never by reference
		}
		if failureEdge {
			continue
		}
		if ref, ok := r.lastOutput[key]; ok {
			if refs == nil {
				refs = make(map[string]state.OutputRef, len(rd.Satisfied))
			}
			refs[d] = ref
		}
	}
	var params map[string]any
	for _, q := range rd.Requests {
		if params == nil {
			params = map[string]any{}
		}
		for k, v := range q.Parameters {
			params[k] = v
		}
	}
	return &runners.Request{
		Ensemble:          r.ens,
		Agent:             a,
		Input:             st.Input,
		Turn:              turn,
		Execution:         st.AgentExecutionCount[a.Name] + 1,
		Dependencies:      deps,
		Fresh:             rd.Fresh,
		Context:           st.AccumulatedContext,
		RequestParameters: params,
		Memory:            st.Memory[a.Name],
		Events:            r.agentSink(turn, a.Name),
	}, refs, handles, selErr
}

// selectEnv is the conditions' environment for a select, as the turn starts.
func selectEnv(st *state.State, history bool) *conditions.Env {
	env := &conditions.Env{Context: st.AccumulatedContext, TurnCount: st.TurnCount, Executions: st.AgentExecutionCount, Input: st.Input}
	if history {
		env.History = st.HistoryValues()
	}
	return env
}

// agentSink stamps an agent's own events (tool calls, text) with its turn.
func (r *Run) agentSink(turn int, agent string) events.Sink {
	if r.opts.Events == nil {
		return nil
	}
	return func(e events.Event) {
		e.Turn, e.Agent = turn, agent
		r.opts.Events.Emit(e)
	}
}

// runOne runs one execution under the agent's own timeout. A runner that
// panics fails its execution, never the run.
func (r *Run) runOne(ctx context.Context, req *runners.Request) (res *runners.Result) {
	a := req.Agent
	r.opts.Events.Emit(events.Event{Type: events.AgentStarted, Turn: req.Turn, Agent: a.Name, Execution: req.Execution})
	if a.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeoutCause(ctx, a.Timeout, fmt.Errorf("agent timeout of %s", a.Timeout))
		defer cancel()
	}
	defer func() {
		if p := recover(); p != nil {
			res = &runners.Result{Err: fmt.Errorf("internal error: %v", p)}
		}
		if res == nil {
			res = &runners.Result{Err: errors.New("internal error: the runner returned no result")}
		}
		// Say why the context ended (the agent's own timeout), unless the
		// runner already did.
		if cause := context.Cause(ctx); res.Err != nil && ctx.Err() != nil && cause != ctx.Err() && !errors.Is(res.Err, cause) {
			res.Err = fmt.Errorf("%w (%v)", res.Err, cause)
		}
		r.redact(res)
	}()
	return r.opts.Runner.Run(ctx, req)
}

// redact removes every key from what an execution returned.
func (r *Run) redact(res *runners.Result) {
	sec := r.opts.Secrets
	if sec.Empty() {
		return
	}
	res.Output, res.InputData = sec.Value(res.Output), sec.Value(res.InputData)
	res.Err, res.Stderr = sec.Error(res.Err), sec.String(res.Stderr)
	// Memory (an LLM agent's conversation) is not scanned here: it grows
	// with the agent's executions, and everything in it is redacted already:
	// replies and tool results by the LLM runner, the inputs it was given
	// by this function before they reached the state.
}

// commit applies a finished turn to the state, in file order: consumption
// first (against the outputs as they were when the turn started), then
// outputs, records and agent requests.
func (r *Run) commit(turn int, ready []resolver.Ready, outs []outcome) {
	st := r.st
	for _, rd := range ready {
		resolver.Consume(st, rd)
	}
	for i, rd := range ready {
		a, o := rd.Agent, outs[i]
		res := o.res
		st.AgentExecutionCount[a.Name]++
		rec := &state.Record{
			TurnNumber:    turn,
			AgentName:     a.Name,
			Execution:     o.req.Execution,
			InputData:     byReference(res.InputData, o.req.Dependencies, o.refs),
			ExecutionTime: o.took.Seconds(),
			Timestamp:     o.started.UTC(),
			Usage:         res.Usage,
			Stderr:        res.Stderr,
		}
		if res.StopReason != "" {
			rec.StopReason = &res.StopReason
		}
		if res.Memory != nil {
			st.Memory[a.Name] = res.Memory
		}
		ev := events.Event{Turn: turn, Agent: a.Name, Execution: o.req.Execution, Duration: rec.ExecutionTime}
		if res.Err != nil {
			msg := res.Err.Error()
			rec.Error = &msg
			ev.Type, ev.Error = events.AgentFailed, msg
		} else {
			rec.OutputData = res.Output
			rec.Handles = o.handles
			st.AccumulatedContext[a.StateKey()] = res.Output
			r.noteOutput(a, o.req.Execution, res.Output)
			st.OutputCount[a.Name]++
			if a.Conversation.TriggersConversation {
				if msg := r.queueRequests(a.Name, res.Output); msg != "" {
					rec.Error = &msg
				}
			}
			ev.Type, ev.Output, ev.Error = events.AgentCompleted, res.Output, deref(rec.Error)
		}
		st.AppendRecord(rec)
		r.opts.Events.Emit(ev)
	}
	st.TurnCount = turn
}

// byReference returns input data whose "dependencies" hold, in place of each
// output delivered unchanged and longer than a reference, a reference to the
// execution that produced it (docs/cli.md#the-result): the history holds
// that output already. Anything a runner changed or added stays as it is.
func byReference(inputData any, delivered map[string]any, refs map[string]state.OutputRef) any {
	m, ok := inputData.(map[string]any)
	if !ok || len(refs) == 0 {
		return inputData
	}
	deps, ok := m["dependencies"].(map[string]any)
	if !ok || len(deps) == 0 {
		return inputData
	}
	var out map[string]any
	for k, v := range deps {
		if ref, ok := refs[k]; ok && identical(v, delivered[k]) {
			if out == nil {
				out = make(map[string]any, len(deps))
				for k2, v2 := range deps {
					out[k2] = v2
				}
			}
			out[k] = &ref
		}
	}
	if out == nil {
		return inputData // every output is short: written in full
	}
	cp := make(map[string]any, len(m))
	for k, v := range m {
		cp[k] = v
	}
	cp["dependencies"] = out
	return cp
}

// noteOutput records that a's state key holds the output of its execution
// n: by reference from now on if it is long, in full if not.
func (r *Run) noteOutput(a *ensemble.Agent, n int, output any) {
	if longer(output, refSize) {
		r.lastOutput[a.StateKey()] = state.OutputRef{AgentName: a.Name, Execution: n}
	} else {
		delete(r.lastOutput, a.StateKey())
	}
}

// refSize is about the size of a reference in JSON: shorter outputs are
// written in full.
const refSize = 100

// longer reports whether v, as compact JSON, is longer than n bytes; it
// stops walking v as soon as it knows.
func longer(v any, n int) bool {
	left := n
	var walk func(v any) bool // true: over budget
	walk = func(v any) bool {
		switch x := v.(type) {
		case string:
			left -= len(x) + 2
		case map[string]any:
			left -= 2
			for k, e := range x {
				if left -= len(k) + 4; left < 0 || walk(e) {
					return true
				}
			}
		case []any:
			left -= 2
			for _, e := range x {
				if left--; left < 0 || walk(e) {
					return true
				}
			}
		default:
			left -= 8 // numbers, booleans, null: a few bytes
		}
		return left < 0
	}
	return walk(v)
}

// identical reports whether a and b are the same value: the same map or
// list, or equal scalars. It never walks a value.
func identical(a, b any) bool {
	switch x := a.(type) {
	case map[string]any:
		y, ok := b.(map[string]any)
		return ok && len(x) == len(y) && (len(x) == 0 || reflect.ValueOf(x).UnsafePointer() == reflect.ValueOf(y).UnsafePointer())
	case []any:
		y, ok := b.([]any)
		return ok && len(x) == len(y) && (len(x) == 0 || &x[0] == &y[0])
	case nil, string, float64, bool, int:
		return a == b
	}
	return false
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// queueRequests reads "agent_requests" from an output (docs/semantics.md#agent-requests) and
// queues the valid ones for the next turn. It returns a message naming the
// requests it could not honour (malformed ones, unknown targets), or "".
func (r *Run) queueRequests(from string, output any) string {
	obj, ok := output.(map[string]any)
	if !ok {
		return ""
	}
	raw, ok := obj["agent_requests"]
	if !ok {
		return ""
	}
	list, ok := raw.([]any)
	if !ok {
		return "agent_requests must be a list of {target_agent_name, parameters}"
	}
	var problems, unknown []string
	for i, item := range list {
		m, ok := item.(map[string]any)
		if !ok {
			problems = append(problems, fmt.Sprintf("agent_requests[%d] must be an object {target_agent_name, parameters}", i+1))
			continue
		}
		target, _ := m["target_agent_name"].(string)
		switch {
		case target == "":
			problems = append(problems, fmt.Sprintf("agent_requests[%d] has no target_agent_name", i+1))
			continue
		case r.ens.Agent(target) == nil:
			unknown = append(unknown, strconv.Quote(target))
			continue
		}
		params, ok := m["parameters"].(map[string]any)
		if p, given := m["parameters"]; given && p != nil && !ok {
			problems = append(problems, fmt.Sprintf("agent_requests[%d] (for %q): parameters must be an object, got %s", i+1, target, jsonType(p)))
			continue
		}
		r.st.Pending = append(r.st.Pending, state.AgentRequest{From: from, Target: target, Parameters: params})
	}
	if len(unknown) > 0 {
		problems = append(problems, "agent_requests names unknown agents: "+strings.Join(unknown, ", "))
	}
	return strings.Join(problems, "; ")
}

// jsonType names the JSON type of a decoded value.
func jsonType(v any) string {
	switch v.(type) {
	case string:
		return "string"
	case float64, int:
		return "number"
	case bool:
		return "boolean"
	case []any:
		return "array"
	}
	return fmt.Sprintf("%T", v)
}
