// Package events is the run's event stream (docs/cli.md#events): typed events that the
// engine emits and that the outputs (text progress, JSONL, the Markdown
// report, library callers) consume.
//
// The engine pushes every event into one Sink. Sinks compose: Tee fans one
// stream out to several consumers, Log keeps the events in memory, and Stream
// turns the push-style Sink into a pull-style sequence (iter.Seq) with
// bounded buffering, the Go analogue of an async generator.
//
// # Order
//
// A run emits, in this order:
//
//	run_started                       (message: the input; turn: the turns
//	                                   already completed, when the run was
//	                                   resumed from a state file)
//	warning                           (a condition failed at run time, while
//	                                   resolving the next turn; each once)
//	turn_started                      (turn, agents: the ready agents in file order)
//	  agent_started                   (per agent, when it actually starts: at most
//	                                   parallel_agent_limit at once)
//	    tool_call_started             (LLM agents, per tool call)
//	    tool_call_completed           (output or error, duration)
//	    text_delta                    (LLM agents with --stream: message holds the text)
//	    input_timed_out               (ask agents: the question's deadline passed;
//	                                   message: the deadline, output or error:
//	                                   what on_timeout made of it)
//	  agent_finished                  (the execution returned: duration, error)
//	  agent_completed | agent_failed  (per agent, in file order, when the turn commits)
//	turn_completed
//	... more turns ...
//	expectations_checked              (a completed run with expectations: message
//	                                   "held" or "failed"; expectations)
//	run_completed                     (message: the completion reason; result: the result)
//
// Events of the agents of one turn interleave. A turn that is interrupted
// (timeout, SIGINT) is not committed: its agents get no agent_completed or
// agent_failed and the turn no turn_completed; run_completed follows, and the
// result's errors name the interrupted executions. So agent_completed +
// agent_failed always equals the number of history records of the result
// (of its turns after run_started's turn, for a resumed run: the earlier
// ones were reported by the invocation that ran them).
//
// The agents of a child ensemble (docs/semantics.md#ensembles-of-ensembles)
// emit their agent, tool and text events, and warnings, into the parent's
// stream, named by path (review_round/critic) and stamped with the parent's
// turn; the child's run and turn events are not forwarded. Their
// agent_completed and agent_failed events count the records kept under
// their parent's record (child.conversation_history).
//
// Part of the public API (go doc github.com/ensemble-run/ensemble).
package events

import "time"

// Type names an event. The values are those of docs/cli.md#events, plus text_delta and
// agent_finished.
type Type string

const (
	RunStarted        Type = "run_started"
	TurnStarted       Type = "turn_started"
	AgentStarted      Type = "agent_started"
	ToolCallStarted   Type = "tool_call_started"
	ToolCallCompleted Type = "tool_call_completed"
	// TextDelta is a piece of streamed LLM text (only when streaming is on).
	TextDelta Type = "text_delta"
	// AgentFinished: an execution returned. Its outcome is committed, and
	// reported as agent_completed or agent_failed, when the whole turn ends
	// (in file order); a live display uses this one to stop its clock.
	AgentFinished  Type = "agent_finished"
	AgentCompleted Type = "agent_completed"
	AgentFailed    Type = "agent_failed"
	// AgentSkipped: a ready agent was skipped instead of run, its guard
	// false or its dependencies skipped (docs/semantics.md#guards-that-skip);
	// emitted when the turn is committed, in file order.
	AgentSkipped  Type = "agent_skipped"
	Warning       Type = "warning"
	TurnCompleted Type = "turn_completed"
	// InputRequested: an ask agent waits for an answer given to resume
	// (docs/semantics.md#ask-agents-that-wait); the run then ends.
	InputRequested Type = "input_requested"
	// InputTimedOut: an ask agent's question was not answered by its
	// deadline (docs/semantics.md#answers-that-time-out): message the
	// deadline (RFC 3339), output the on_timeout answer it took, or error
	// its failure (ask_timeout).
	InputTimedOut Type = "input_timed_out"
	RunCompleted  Type = "run_completed"
	// AgentRetry: an attempt of an execution failed and the agent's retry
	// tries it again (docs/semantics.md#retries): attempt is the failed one.
	AgentRetry Type = "agent_retry"
	// BudgetExceeded: a model request was refused because a budget was
	// spent (docs/semantics.md#budgets); the run ends as budget_exceeded.
	BudgetExceeded Type = "budget_exceeded"
	// ExpectationsChecked: a completed run checked its expectations
	// (docs/semantics.md#expectations), just before run_completed:
	// message "held" or "failed", expectations each as the result has it.
	ExpectationsChecked Type = "expectations_checked"
)

// Types lists every event type, in the order a run emits them.
var Types = []Type{RunStarted, Warning, TurnStarted, AgentStarted, ToolCallStarted, ToolCallCompleted, TextDelta,
	InputTimedOut, AgentRetry, BudgetExceeded, AgentFinished, AgentCompleted, AgentFailed, AgentSkipped, TurnCompleted, InputRequested, ExpectationsChecked, RunCompleted}

// Event is one event. Fields that do not apply to a type are left empty (and
// omitted from JSON).
type Event struct {
	Type      Type      `json:"type"`
	Time      time.Time `json:"timestamp"`
	Turn      int       `json:"turn,omitempty"`
	Agent     string    `json:"agent,omitempty"`
	Execution int       `json:"execution,omitempty"`
	Agents    []string  `json:"agents,omitempty"` // turn_started: the agents that run
	Tool      string    `json:"tool,omitempty"`
	ToolID    string    `json:"tool_call_id,omitempty"`
	Arguments string    `json:"arguments,omitempty"` // tool calls: the arguments as the model sent them
	Output    any       `json:"output,omitempty"`    // agent_completed: the output; tool_call_completed: the result
	Error     string    `json:"error,omitempty"`
	Message   string    `json:"message,omitempty"` // warnings; text deltas; run_started: the input; run_completed: the reason
	Duration  float64   `json:"duration_seconds,omitempty"`
	Result    any       `json:"result,omitempty"`  // run_completed: the result object of docs/cli.md#the-result
	Attempt   int       `json:"attempt,omitempty"` // agent_retry: the attempt that failed (from 1)
	// Spend is budget_exceeded's spend so far: the run's and the agent's.
	Spend any `json:"spend,omitempty"`
	// input_requested: the question and what the answered execution will be given.
	Question     string         `json:"question,omitempty"`
	Dependencies map[string]any `json:"dependencies,omitempty"`
	// Deadline is input_requested's: when the question stops waiting
	// (the ask agent's timeout:); input_timed_out's is in Message.
	Deadline *time.Time `json:"deadline,omitempty"`
	// Expectations are expectations_checked's expectations.
	Expectations any `json:"expectations,omitempty"`
	// Warning is a warning event's record (a state.Warning) when it is a
	// read of a missing key or a null message: its kind, path and
	// suggestion (docs/semantics.md#reads-of-missing-keys).
	Warning any `json:"warning,omitempty"`
}

// Sink receives events. It must be safe for concurrent use: agents of one
// turn emit concurrently.
type Sink func(Event)

// Emit calls s if it is set, stamping the time.
func (s Sink) Emit(e Event) {
	if s == nil {
		return
	}
	if e.Time.IsZero() {
		e.Time = time.Now().UTC()
	}
	s(e)
}

// Tee returns a Sink that passes each event to every non-nil sink, in order;
// nil when there is none.
func Tee(sinks ...Sink) Sink {
	var live []Sink
	for _, s := range sinks {
		if s != nil {
			live = append(live, s)
		}
	}
	switch len(live) {
	case 0:
		return nil
	case 1:
		return live[0]
	}
	return func(e Event) {
		for _, s := range live {
			s(e)
		}
	}
}
