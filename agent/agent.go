// Package agent is the contract between the engine and the kinds of agent
// (script, llm, ask, ...): what one execution of an agent is given
// (Request), what it returns (Result), what runs it (Runner), and what a
// kind supplies (Kind). Each kind lives in its own package; package kinds
// wires them together for the CLI and for `ensemble test`.
//
// Part of the public API (go doc github.com/ensemble-run/ensemble).
package agent

import (
	"context"
	"encoding/json"
	"errors"
	"slices"

	"github.com/ensemble-run/ensemble/ensemble"
	"github.com/ensemble-run/ensemble/events"
	"github.com/ensemble-run/ensemble/state"
)

// Request is everything one execution of one agent is given. Runners must
// treat it as read-only: it points into the state as it was at the start of
// the turn.
type Request struct {
	Ensemble *ensemble.Ensemble
	Agent    *ensemble.Agent
	Input    string // the run's input
	Turn     int    // 1-based number of the turn this execution belongs to
	// Execution is the 1-based number of this execution of the agent.
	Execution int
	// Dependencies holds the latest output behind each satisfied edge, keyed
	// by dependency name.
	Dependencies map[string]any
	// Fresh names the dependencies in Dependencies whose outputs this agent
	// has not consumed before, in file order.
	Fresh []string
	// Skipped names the dependencies in Dependencies that delivered a skip
	// (docs/semantics.md#guards-that-skip): their value is nil.
	Skipped []string
	// Context is the whole accumulated context (read-only).
	Context map[string]any
	// RequestParameters merges the parameters of the agent requests that made
	// it ready (docs/semantics.md#agent-requests); nil when none.
	RequestParameters map[string]any
	// Memory is what this agent's runner kept from its previous executions
	// (an LLM agent's conversation); nil on the first.
	Memory json.RawMessage
	// Events receives tool-call and streaming events; may be nil.
	Events events.Sink
	// Instance is set for an instance of a fan-out agent: its item.
	Instance *Instance
	// Templates are the values of the agent's templates for this execution
	// (ensemble.Agent.Templates: its input, an LLM agent's prompt), by
	// field, evaluated by the engine as it planned the execution
	// (docs/semantics.md#what-an-agent-receives); nil when it has none.
	Templates map[string]any
	// Path is set for an agent of a child ensemble: its place from the top
	// file's agents, `review_round/critic` (docs/semantics.md#ensembles-of-ensembles),
	// which injected responses and events name it by; "" at the top.
	Path string
	// PathSeq is set for an agent of a child ensemble that an instance of
	// a fan-out runs: the Seq of the nearest such instance above it (its
	// place among the fan-out agent's instances in the run, in item
	// order), by which a shared entry (`analyst/think`) answers each
	// instance's child (docs/testing.md#the-responses-file); 0 otherwise.
	PathSeq int
	// ChildRun is set for an agent of a child ensemble: the one run of the
	// child it executes in (each execution of the agent that runs the
	// child, each iteration of its loop, is a run of its own). Runners keep
	// there what they count per run of a child: the injected responses
	// earlier runs took, after which a fan-out's instances take theirs
	// by their place in item order (docs/testing.md#the-responses-file).
	ChildRun *ChildRun
	// Budget is what the run lets this execution spend on model requests;
	// nil allows everything. A runner calls Reserve before every model
	// request (docs/semantics.md#budgets).
	Budget Budget
	// Services are what the run lends the execution (its runner, secrets,
	// recording, MCP servers, tracer, answers); set by the engine, zero
	// outside a run.
	Services Services
	// Slots are the parallel budget of the run's tree, of which the
	// execution holds one; a child run it starts has it lent (Slots.Lend,
	// engine.ChildOptions). Nil outside a run's executions.
	Slots *Slots
}

// Template is the value of the agent's template of field (input, prompt)
// for this execution; ok is false when the agent has no such template.
func (r *Request) Template(field string) (v any, ok bool) {
	v, ok = r.Templates[field]
	return v, ok
}

// Budget is the spend a run allows an execution. Reserve is called before
// each model request: an error refuses the request (the budget is spent,
// and the run is ending), otherwise done must be called once the request
// returned, with what it used (nil when it failed). Safe for concurrent use.
type Budget interface {
	Reserve() (done func(used *state.Usage), err error)
}

// Result is the outcome of one execution.
type Result struct {
	// Output is the agent's output (docs/semantics.md#state): a parsed JSON value, or a
	// string. Ignored when Err is set. Agent requests (docs/semantics.md#agent-requests) are read from
	// it by the engine.
	Output any
	// InputData is what the execution was given (docs/cli.md#the-result): for scripts the
	// stdin object less context, for LLM agents the messages it added.
	InputData any
	// Err is set when the execution failed.
	Err error
	// Stderr is the tail of what a script printed on stderr (the last
	// StderrTail bytes, see Exec), whether it succeeded or not; "" for
	// other agents.
	Stderr string
	// StopReason and Usage are set by LLM agents (docs/llm.md#tools).
	StopReason string
	Usage      *state.Usage
	// Memory replaces the agent's memory when the turn commits; nil keeps it.
	Memory json.RawMessage
	// Details are what the kind records of the execution beyond these
	// fields, kept in its record as they are (state.Detail): the fallback
	// profile that answered an LLM agent (docs/llm.md#fallbacks), the run
	// of a child ensemble (docs/semantics.md#ensembles-of-ensembles).
	Details state.Details
	// Misses are the reads of missing keys the execution's own
	// expressions made (a loop's until and carry), which the engine
	// records as warnings (docs/semantics.md#reads-of-missing-keys).
	Misses []Miss
	// Warnings are the reads of missing keys and null messages of the
	// runs of a child ensemble the execution made, their agents named by
	// path (review_round/critic), which the engine records as the run's.
	Warnings []state.Warning
}

// Miss is a read of a missing key by one of an execution's expressions:
// What names the expression's field (until, carry).
type Miss struct {
	What string
	// Expression is the source of the expression that read the key, as
	// written; Path is the read as written (context.get_diff.touches_cod),
	// Key the missing key (touches_cod).
	Expression, Path, Key string
	// Suggest, when set, is the key of the map read closest to Key (a
	// spelling away), "" when none is. The engine calls it only for a miss
	// it reports: the search costs the map's keys.
	Suggest func() string
}

// Name is how injected responses and events name the agent of req: its
// Path in a child ensemble, else its instance's name or its own.
func (r *Request) Name() string {
	switch {
	case r.Path != "":
		return r.Path
	case r.Instance != nil:
		return r.Instance.Name
	}
	return r.Agent.Name
}

// ErrAwaitingInput is the error (wrapped in Result.Err) of an execution
// that asked a person and has no answer yet, in a run an answer can come
// back to (the ask kind's Options.Suspend): the engine does not record it, and the run ends
// awaiting_input after its turn (docs/semantics.md#ask-agents-that-wait).
var ErrAwaitingInput = errors.New("waiting for an answer")

// Runner runs one execution of an agent. It never panics on bad agent
// behaviour: failures are reported in Result.Err.
type Runner interface {
	Run(ctx context.Context, req *Request) *Result
}

// RunnerFunc adapts a function to Runner.
type RunnerFunc func(ctx context.Context, req *Request) *Result

// Run calls f.
func (f RunnerFunc) Run(ctx context.Context, req *Request) *Result { return f(ctx, req) }

// DependencyOrder lists the keys of r.Dependencies in the agent's
// declaration order, then any others sorted: the order in which an ask
// agent shows them and an LLM agent's first user message labels them.
func (r *Request) DependencyOrder() []string {
	names := make([]string, 0, len(r.Dependencies))
	seen := make(map[string]bool, len(r.Dependencies))
	if r.Agent != nil {
		for _, d := range r.Agent.Dependencies {
			if _, ok := r.Dependencies[d.AgentName]; ok && !seen[d.AgentName] {
				names = append(names, d.AgentName)
				seen[d.AgentName] = true
			}
		}
	}
	var rest []string
	for k := range r.Dependencies {
		if !seen[k] {
			rest = append(rest, k)
		}
	}
	slices.Sort(rest)
	return append(names, rest...)
}
