// Package events is the run's event stream (SPEC §6): typed events that the
// engine emits and that the outputs (text progress, JSONL, library callers)
// consume.
package events

import "time"

// Type names an event; the values are those of SPEC §6.
type Type string

const (
	RunStarted        Type = "run_started"
	TurnStarted       Type = "turn_started"
	AgentStarted      Type = "agent_started"
	ToolCallStarted   Type = "tool_call_started"
	ToolCallCompleted Type = "tool_call_completed"
	TextDelta         Type = "text_delta" // streamed LLM text (when streaming is on)
	AgentCompleted    Type = "agent_completed"
	AgentFailed       Type = "agent_failed"
	Warning           Type = "warning"
	TurnCompleted     Type = "turn_completed"
	RunCompleted      Type = "run_completed"
)

// Event is one event. Fields that do not apply to a type are left empty.
type Event struct {
	Type      Type      `json:"type"`
	Time      time.Time `json:"timestamp"`
	Turn      int       `json:"turn,omitempty"`
	Agent     string    `json:"agent,omitempty"`
	Execution int       `json:"execution,omitempty"`
	Agents    []string  `json:"agents,omitempty"` // turn_started: the agents that run
	Tool      string    `json:"tool,omitempty"`
	ToolID    string    `json:"tool_call_id,omitempty"`
	Arguments string    `json:"arguments,omitempty"`
	Output    any       `json:"output,omitempty"`
	Error     string    `json:"error,omitempty"`
	Message   string    `json:"message,omitempty"` // warnings; text deltas
	Duration  float64   `json:"duration_seconds,omitempty"`
	Result    any       `json:"result,omitempty"` // run_completed: the result object of SPEC §6
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
