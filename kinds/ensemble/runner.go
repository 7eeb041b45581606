package ensemble

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"go.opentelemetry.io/otel/trace"

	"github.com/ensemble-run/ensemble/agent"
	"github.com/ensemble-run/ensemble/engine"
	format "github.com/ensemble-run/ensemble/ensemble"
	"github.com/ensemble-run/ensemble/events"
	"github.com/ensemble-run/ensemble/internal/conditions"
	"github.com/ensemble-run/ensemble/internal/jsonvalue"
	"github.com/ensemble-run/ensemble/internal/runners"
	"github.com/ensemble-run/ensemble/internal/tracing"
	"github.com/ensemble-run/ensemble/scriptexec"
	"github.com/ensemble-run/ensemble/state"
)

// Runner runs ensemble and dispatch agents: each execution runs the child
// ensemble (once, or as a loop's iterations) from a fresh state, as a run of
// its own bounded by the execution's context (the parent's timeout and
// cancellation, the agent's timeout_seconds), and under the child's own
// conversation_limits.
type Runner struct {
	Host *agent.Host
}

var _ agent.Runner = (*Runner)(nil)

// Run runs the child.
func (r *Runner) Run(ctx context.Context, req *agent.Request) *agent.Result {
	s := SpecOf(req.Agent)
	input := childInput(req)
	in := scriptexec.BaseInputData(req)
	res := &agent.Result{InputData: in}
	// The reads of missing keys of on, until and carry, which the engine
	// records as warnings (docs/semantics.md#reads-of-missing-keys).
	var onReads, untilReads, carryReads conditions.Reads
	defer addMisses(res, &onReads, &untilReads, &carryReads)
	defer checkOutput(req, res)
	child, file := s.Child, s.File
	if s.on != nil || s.Cases != nil {
		c, key, err := s.choose(ctx, req, &onReads)
		in["dispatch"] = key
		if err != nil {
			res.Err = fmt.Errorf("agent %q: %w", req.Agent.Name, err)
			return res
		}
		child, file = c.Child, c.File
	}
	in["ensemble"], in["child_input"] = file, input
	if child == nil {
		res.Err = fmt.Errorf("agent %q: the child ensemble %s was not loaded", req.Agent.Name, file)
		return res
	}
	var usage state.Usage
	defer setUsage(res, &usage)
	// What the child ran is recorded (state.ChildDetail), and a loop's
	// iterations (IterationsDetail).
	var last *state.Child
	iterations := 0
	defer recordChild(req, res, &last, &iterations)
	max := 1
	if s.Loop != nil {
		max = s.Loop.MaxIterations
	}
	for i := 1; ; i++ {
		out, final, rec, err := r.runChild(ctx, req, child, file, s.Output, input, &usage, &res.Warnings)
		if last != nil {
			// A loop keeps its earlier iterations slim (earlier): the last
			// one whole, on top. until and carry see the last one only.
			rec.Earlier = append(last.Earlier, earlier(last))
			last.Earlier = nil
		}
		last = rec
		if s.Loop != nil {
			iterations = i
		}
		outcome := conditions.Outcome{Status: "ok"}
		if err != nil {
			if s.Loop == nil || !s.Loop.Continue || !continuable(ctx, rec, err) {
				if s.Loop != nil {
					err = fmt.Errorf("iteration %d: %w", i, err)
				}
				res.Err = fmt.Errorf("agent %q: %w", req.Agent.Name, err)
				return res
			}
			// on_iteration_error: continue: until and carry see the
			// failure; the output is null.
			outcome = conditions.Outcome{Status: "failed", Error: err.Error()}
			out = nil
		}
		res.Output = out
		if s.Loop == nil {
			return res
		}
		done, err := s.Loop.done(ctx, out, final, rec, input, outcome, &untilReads)
		if err != nil {
			res.Err = fmt.Errorf("agent %q: iteration %d: %w", req.Agent.Name, i, err)
			return res
		}
		if done {
			return res
		}
		if i >= max {
			if !s.Loop.Succeed {
				res.Err = fmt.Errorf("agent %q: loop exhausted: until (%s) was still false after %d iterations", req.Agent.Name, s.Loop.Until, max)
			}
			return res
		}
		if s.Loop.carry != nil {
			e := env(final, rec, input)
			e.Reads = &carryReads
			v, err := s.Loop.carry.EvalOutcome(ctx, e, out, outcome)
			if err != nil {
				res.Err = fmt.Errorf("agent %q: iteration %d: carry (%s): %w", req.Agent.Name, i, s.Loop.Carry, err)
				return res
			}
			input = jsonvalue.Text(v)
		}
	}
}

// addMisses adds the reads of missing keys of on, until and carry to the
// result, which the engine records as warnings.
func addMisses(res *agent.Result, on, until, carry *conditions.Reads) {
	for _, r := range []struct {
		what  string
		reads *conditions.Reads
	}{{"dispatch on", on}, {"until", until}, {"carry", carry}} {
		for _, m := range r.reads.Take() {
			res.Misses = append(res.Misses, agent.Miss{What: r.what, Expression: m.Expression, Path: m.Path, Key: m.Key, Suggest: m.Suggest})
		}
	}
}

// checkOutput holds the output the execution ends with (the last
// iteration's, for a loop) to the agent's schema (docs/format.md#output-schemas).
func checkOutput(req *agent.Request, res *agent.Result) {
	if res.Err == nil {
		res.Err = runners.CheckSchema(req.Agent, res.Output)
	}
}

// setUsage is the usage of the child's runs in the result, when there was
// any.
func setUsage(res *agent.Result, usage *state.Usage) {
	if *usage != (state.Usage{}) {
		res.Usage = usage
	}
}

// recordChild records what the child ran (state.ChildDetail) and a loop's
// iterations (IterationsDetail).
func recordChild(req *agent.Request, res *agent.Result, last **state.Child, iterations *int) {
	if *last != nil {
		if err := res.Details.Put(state.ChildDetail, *last); err != nil && res.Err == nil {
			res.Err = fmt.Errorf("agent %q: %w", req.Agent.Name, err)
		}
	}
	if *iterations > 0 {
		_ = res.Details.Put(IterationsDetail, *iterations)
	}
}

// earlier is an iteration of a loop as it is kept once the next one has
// run: its ending, its turns and its records (which executions ran, in
// which turns, how each ended, what they used), without their inputs,
// outputs and stderr, which the next iteration replaced (its input is the
// last one's carry). A loop of many iterations over large outputs then
// keeps, in memory and in its record, one of them, not every one.
func earlier(c *state.Child) *state.Child {
	slim := &state.Child{Ensemble: c.Ensemble, CompletionReason: c.CompletionReason, TurnCount: c.TurnCount,
		ConversationHistory: make([]*state.Record, len(c.ConversationHistory))}
	for i, r := range c.ConversationHistory {
		slim.ConversationHistory[i] = slimRecord(r)
	}
	return slim
}

// slimRecord is r without its input, output and stderr; the run of a
// child it holds is slim too (every iteration of it).
func slimRecord(r *state.Record) *state.Record {
	cp := *r
	cp.InputData, cp.OutputData, cp.Stderr = nil, nil, ""
	cp.Details = slices.Clone(r.Details)
	if c := r.Child(); c != nil {
		s := earlier(c)
		for _, e := range c.Earlier {
			s.Earlier = append(s.Earlier, earlier(e))
		}
		_ = cp.Details.Put(state.ChildDetail, s)
	}
	return &cp
}

// runChild runs child once from a fresh state and returns its output: the
// output of its agent named output, or with output "" what the child
// returns (format.Ensemble.ResultOf).
func (r *Runner) runChild(ctx context.Context, req *agent.Request, child *format.Ensemble, file, output, input string, usage *state.Usage,
	warnings *[]state.Warning) (out any, final map[string]any, rec *state.Child, err error) {
	// The child's agents are run by the runner that runs this agent (the
	// run's, which injected responses wrap), named by their path.
	next := req.Services.Runner
	if p, ok := next.(*pathRunner); ok {
		next = p.next
	}
	if next == nil {
		next = r.Host.Dispatch
	}
	if next == nil {
		return nil, nil, nil, errors.New("no runner is configured for the child's agents")
	}
	local := req.Agent.Name
	if req.Instance != nil {
		local = req.Instance.Name
	}
	// The child shares the services of this agent's run; the parent's
	// budget (its run's caps, this agent's budget) binds the child's model
	// requests as they are made.
	seq := req.PathSeq
	if req.Instance != nil {
		seq = req.Instance.Seq
	}
	opts := engine.ChildOptions(req, &pathRunner{prefix: req.Name() + "/", seq: seq, run: &agent.ChildRun{}, next: next})
	if req.Events != nil {
		opts.Events = func(ev events.Event) {
			switch ev.Type {
			case events.RunStarted, events.RunCompleted, events.TurnStarted, events.TurnCompleted:
				return // the child's own framing: the parent's turn frames it
			}
			if ev.Agent != "" {
				ev.Agent = local + "/" + ev.Agent
			} else {
				ev.Agent = local
			}
			req.Events(ev)
		}
	}
	// The child's run has this execution's slot lent (ChildOptions): the
	// tree shares one parallel budget (docs/semantics.md#ensembles-of-ensembles).
	res := engine.New(child, input, opts).Run(ctx)
	usage.Add(&res.Usage)
	// The child's reads of missing keys are the parent run's warnings,
	// its agents named by path (docs/semantics.md#reads-of-missing-keys).
	for _, w := range res.Warnings {
		if !w.Strict() {
			continue
		}
		w.AgentName = local + "/" + w.AgentName
		if !slices.ContainsFunc(*warnings, func(x state.Warning) bool { // each once, however many iterations
			return x.Kind == w.Kind && x.AgentName == w.AgentName && x.Expression == w.Expression && x.Path == w.Path && x.Dependency == w.Dependency
		}) {
			*warnings = append(*warnings, w)
		}
	}
	rec = &state.Child{Ensemble: child.Name, CompletionReason: res.CompletionReason, TurnCount: res.TurnCount,
		ConversationHistory: res.ConversationHistory}
	if res.CompletionReason != engine.Completed || res.ExitCode() != engine.ExitOK {
		msg := fmt.Sprintf("the child ensemble %s ended %s", file, res.CompletionReason)
		for _, e := range res.Errors {
			if !e.Handled {
				msg += fmt.Sprintf(" (%s: %s)", e.AgentName, e.Message)
				break
			}
		}
		if res.CompletionReason == engine.Completed {
			msg = fmt.Sprintf("the child ensemble %s completed with a failure", file) + strings.TrimPrefix(msg, fmt.Sprintf("the child ensemble %s ended completed", file))
		}
		if res.CompletionReason == engine.BudgetExceeded {
			// Never retried; the parent's run ends budget_exceeded too when
			// its own budget refused (docs/semantics.md#budgets).
			return nil, res.FinalState, rec, fmt.Errorf("%s: %w", msg, engine.ErrBudgetExceeded)
		}
		return nil, res.FinalState, rec, errors.New(msg)
	}
	if output == "" {
		// Without an output of the agent's own, what the child file says
		// it returns (its top-level output:), else its whole final state.
		output = child.Output
	}
	if output == "" {
		return maps.Clone(res.FinalState), res.FinalState, rec, nil
	}
	out, ok := res.FinalState[child.Agent(output).StateKey()]
	if !ok {
		return nil, res.FinalState, rec, fmt.Errorf("the child ensemble %s completed, but its agent %q has no output", file, output)
	}
	return out, res.FinalState, rec, nil
}

// pathRunner runs a child's agents with the parent run's runner, each
// request carrying the agent's path.
type pathRunner struct {
	prefix string // the parent agent's path and "/"
	seq    int    // the nearest fan-out instance's Seq above (agent.Request.PathSeq)
	run    *agent.ChildRun
	next   agent.Runner
}

func (p *pathRunner) Run(ctx context.Context, req *agent.Request) *agent.Result {
	cp := *req
	name := req.Agent.Name
	if req.Instance != nil {
		name = req.Instance.Name
	}
	cp.Path, cp.PathSeq, cp.ChildRun = p.prefix+name, p.seq, p.run
	if span := trace.SpanFromContext(ctx); span.IsRecording() { // docs/tracing.md
		span.SetAttributes(tracing.AgentPath.String(cp.Path))
	}
	return p.next.Run(ctx, &cp)
}

// choose evaluates a dispatch's on and picks its case.
func (s *Spec) choose(ctx context.Context, req *agent.Request, reads *conditions.Reads) (*Case, string, error) {
	if s.on == nil {
		return nil, "", errors.New("dispatch has no on expression")
	}
	v, err := s.on.EvalContext(ctx, &conditions.Env{Context: req.Context, Input: req.Input, TurnCount: req.Turn - 1, Reads: reads}, nil)
	if err != nil {
		return nil, "", fmt.Errorf("dispatch on (%s): %w", s.On, err)
	}
	key := jsonvalue.Text(v)
	for _, c := range s.Cases {
		if c.Key == key {
			return c, key, nil
		}
	}
	if s.Default != nil {
		return s.Default, key, nil
	}
	keys := make([]string, len(s.Cases))
	for i, c := range s.Cases {
		keys[i] = c.Key
	}
	return nil, key, fmt.Errorf("dispatch on (%s) gave %q, which is none of the cases (%s), and there is no default", s.On, key, strings.Join(keys, ", "))
}

// done evaluates until over an iteration's output.
func (l *Loop) done(ctx context.Context, out any, final map[string]any, rec *state.Child, input string, o conditions.Outcome, reads *conditions.Reads) (bool, error) {
	if l.until == nil {
		return false, errors.New("loop has no until expression")
	}
	e := env(final, rec, input)
	e.Reads = reads
	v, err := l.until.EvalOutcome(ctx, e, out, o)
	if err != nil {
		return false, fmt.Errorf("until (%s): %w", l.Until, err)
	}
	b, ok := v.(bool)
	if !ok {
		return false, fmt.Errorf("until (%s) must give true or false, got %s", l.Until, jsonvalue.Text(v))
	}
	return b, nil
}

// continuable reports whether a failed iteration may be passed over
// (on_iteration_error: continue): not when a budget stopped the child, nor
// when the execution itself is ending (its timeout, the run's
// cancellation), which stopped the child cancelled.
func continuable(ctx context.Context, rec *state.Child, err error) bool {
	if ctx.Err() != nil || errors.Is(err, engine.ErrBudgetExceeded) || rec == nil {
		return false
	}
	return rec.CompletionReason != engine.BudgetExceeded && rec.CompletionReason != engine.Cancelled
}

// env is what until and carry see besides output: the iteration's final
// state as context, its turns, and its input.
func env(final map[string]any, rec *state.Child, input string) *conditions.Env {
	e := &conditions.Env{Input: input, Context: final}
	if rec != nil {
		e.TurnCount = rec.TurnCount
	}
	return e
}

// childInput is what the child gets as its input: what an LLM agent's first
// user message would hold. The run's input alone is passed as it is; with
// dependency outputs (the fresh ones), request parameters or a fan-out item,
// each part is labelled as in docs/llm.md#messages-and-memory.
//
// An agent with an input template gives the child its text instead (a
// value that is not a string as compact JSON).
func childInput(req *agent.Request) string {
	if text, ok := runners.Given(req); ok {
		return text
	}
	var fresh []string
	for _, n := range req.Fresh {
		if _, ok := req.Dependencies[n]; ok {
			fresh = append(fresh, n)
		}
	}
	if req.Instance == nil && len(fresh) == 0 && len(req.RequestParameters) == 0 {
		return req.Input
	}
	return runners.Labelled(req, true, fresh)
}
