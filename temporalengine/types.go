//go:build !notemporal

// Package temporalengine runs ensembles as Temporal workflows
// (docs/temporal.md): the workflow is the engine's turn loop, fed the
// workflow's clock, and each agent execution is an activity, which any
// worker of the task queue may run. Ask agents wait on a signal, the state
// is a query, and a long run continues as new every few turns so that its
// history stays small.
//
// The engine imports nothing of Temporal: this package gives it an
// executor (engine.Options.Executor) and a clock (engine.Options.Clock).
// A program that imports this package can play a new run, or a batch's,
// on a cluster through package durable (NewOptions.Temporal): the package
// registers itself there as it initialises.
//
// Part of the public API (go doc github.com/ensemble-run/ensemble).
package temporalengine

import (
	"encoding/json"
	"time"

	"github.com/ensemble-run/ensemble/agent"
	"github.com/ensemble-run/ensemble/events"
	"github.com/ensemble-run/ensemble/state"
)

// Names the workers register and the clients use.
const (
	WorkflowName     = "ensemble.run"
	ActivityName     = "ensemble.execute"
	AnswerSignal     = "answer"
	StateQuery       = "state"
	EventsQuery      = "events"
	DefaultTaskQueue = "ensemble"
	DefaultNamespace = "default"
	// DefaultTurnsPerRun is how many turns a workflow run plays before it
	// continues as new (RunInput.TurnsPerRun).
	DefaultTurnsPerRun = 200
)

// RunInput starts a workflow: which file to run (as the workers see it, with
// the sha256 of its contents, which every worker checks), the run's input
// and overrides, and, for a run that continued as new, where it stands.
type RunInput struct {
	Path      string   `json:"path"`
	SHA256    string   `json:"sha256"`
	Input     string   `json:"input"`
	Responses string   `json:"responses,omitempty"` // an injected responses file, as --responses
	Profiles  []string `json:"profiles,omitempty"`
	// Live and LiveAll let LLM agents without responses call their models,
	// as --live and --live-all.
	Live    []string `json:"live,omitempty"`
	LiveAll bool     `json:"live_all,omitempty"`
	// Batch marks a run of a batch, whose ask agents never ask nor wait.
	Batch    bool `json:"batch,omitempty"`
	MaxTurns int  `json:"max_turns,omitempty"`
	// Timeout overrides the ensemble's run timeout when > 0.
	Timeout  time.Duration `json:"timeout,omitempty"`
	Parallel int           `json:"parallel,omitempty"`
	// TurnsPerRun is how many turns one workflow run plays before it
	// continues as new; 0 is DefaultTurnsPerRun.
	TurnsPerRun int `json:"turns_per_run,omitempty"`

	// Set when the run continued as new: the state after its last turn (a
	// state file's JSON), the time the run had spent, the answers given and
	// not yet taken, and how many events came before.
	State     json.RawMessage   `json:"state,omitempty"`
	Elapsed   time.Duration     `json:"elapsed,omitempty"`
	Answers   map[string]string `json:"answers,omitempty"`
	EventBase int               `json:"event_base,omitempty"`
}

// RunOutput is what a workflow returns: the run's result JSON, exactly as
// a local run prints it, its exit code, and the events of its last
// workflow run (since EventBase).
type RunOutput struct {
	Result    json.RawMessage `json:"result"`
	ExitCode  int             `json:"exit_code"`
	Events    []events.Event  `json:"events"`
	EventBase int             `json:"event_base"`
}

// Answer is the payload of AnswerSignal: the answer of an ask agent's next
// execution, read as any output is (JSON text is JSON).
type Answer struct {
	Agent string `json:"agent"`
	Text  string `json:"text"`
}

// EventsPage answers EventsQuery: the events from index From on (counted
// from the run's first event, across continue-as-new).
type EventsPage struct {
	From   int            `json:"from"`
	Events []events.Event `json:"events"`
	Done   bool           `json:"done"`
}

// ExecInput is one execution, as the workflow planned it: the agent's
// request, less what cannot travel (the ensemble is named by path and hash,
// the agent by name). Large values go by reference (Ref).
type ExecInput struct {
	Path              string          `json:"path"`
	SHA256            string          `json:"sha256"`
	Responses         string          `json:"responses,omitempty"`
	Profiles          []string        `json:"profiles,omitempty"`
	Live              []string        `json:"live,omitempty"`
	LiveAll           bool            `json:"live_all,omitempty"`
	Batch             bool            `json:"batch,omitempty"`
	Agent             string          `json:"agent"`
	Input             string          `json:"input"`
	Turn              int             `json:"turn"`
	Execution         int             `json:"execution"`
	Dependencies      map[string]any  `json:"dependencies,omitempty"`
	Fresh             []string        `json:"fresh,omitempty"`
	Context           map[string]any  `json:"context,omitempty"`
	RequestParameters map[string]any  `json:"request_parameters,omitempty"`
	Memory            json.RawMessage `json:"memory,omitempty"`
	Instance          *agent.Instance `json:"instance,omitempty"`
	// Templates are the values of the agent's templates (input, prompt),
	// evaluated by the workflow as it planned the execution.
	Templates map[string]any `json:"templates,omitempty"`
	// Answer is the answer an ask agent takes in this execution, if any.
	Answer *string `json:"answer,omitempty"`
	// TimedOut is the deadline of the ask agent's question, which passed
	// with no answer: the execution applies its on_timeout.
	TimedOut *time.Time `json:"timed_out,omitempty"`
}

// ExecOutput is what an execution returned (agent.Result), its error as
// text: AwaitingInput marks an ask agent with no answer yet.
type ExecOutput struct {
	Output        any             `json:"output,omitempty"`
	InputData     any             `json:"input_data,omitempty"`
	Error         string          `json:"error,omitempty"`
	AwaitingInput bool            `json:"awaiting_input,omitempty"`
	Stderr        string          `json:"stderr,omitempty"`
	StopReason    string          `json:"stop_reason,omitempty"`
	Usage         *state.Usage    `json:"usage,omitempty"`
	Memory        json.RawMessage `json:"memory,omitempty"`
	Details       state.Details   `json:"details,omitempty"`
	// Events are what the execution emitted (tool calls, a child
	// ensemble's agents), in order, for the workflow to pass on.
	Events []events.Event `json:"events,omitempty"`
}
