// Package state is the run's ConversationState (docs/semantics.md#state):
// plain data that the resolver reads, the engine updates at the end of
// each turn, and durable runs save. Only file.go and lock.go do I/O: the
// JSON state file, its Save, Load and lock (docs/semantics.md#durable-runs).
package state

import (
	"encoding/json"
	"math"
	"time"

	"github.com/ensemble-run/ensemble/internal/jsonvalue"
)

// State is the ConversationState.
type State struct {
	Input               string                           `json:"input"`
	TurnCount           int                              `json:"turn_count"`
	AgentExecutionCount map[string]int                   `json:"agent_execution_count"`
	AccumulatedContext  map[string]any                   `json:"accumulated_context"`
	History             []*Record                        `json:"conversation_history"`
	OutputCount         map[string]int                   `json:"output_count"` // successful outputs per agent: the "sequence" of its latest output
	Edges               map[string]map[string]*EdgeState `json:"edges"`        // target agent → dependency → bookkeeping
	Pending             []AgentRequest                   `json:"pending_requests,omitempty"`
	Memory              map[string]json.RawMessage       `json:"memory,omitempty"` // per agent, owned by its runner (an LLM agent's conversation)
	Warnings            []Warning                        `json:"warnings,omitempty"`

	historyAny []any            // History as condition values, appended incrementally
	byAgent    map[string][]int // agent → indexes of its records in History
	indexed    int              // records of History in byAgent
}

// EdgeState is the bookkeeping of one dependency edge.
type EdgeState struct {
	Triggered int `json:"triggered"` // times the edge triggered its agent (it was satisfied and fresh)
	Consumed  int `json:"consumed"`  // OutputCount of the dependency when the agent last consumed it
}

// AgentRequest is a request from one agent to run another next turn (docs/semantics.md#agent-requests).
type AgentRequest struct {
	From       string         `json:"from"`
	Target     string         `json:"target_agent_name"`
	Parameters map[string]any `json:"parameters,omitempty"`
}

// Warning is a condition that failed at run time and so counted as false
// (docs/semantics.md#conditions), or another problem that did not fail an execution.
type Warning struct {
	TurnNumber int    `json:"turn_number"`
	AgentName  string `json:"agent_name"`
	Dependency string `json:"dependency,omitempty"`
	Expression string `json:"expression,omitempty"`
	Message    string `json:"message"`
}

// Usage counts model requests and tokens.
type Usage struct {
	Requests     int `json:"requests"`
	InputTokens  int `json:"input_tokens"`
	OutputTokens int `json:"output_tokens"`
	// Cost is what the tokens cost at the answering profiles' pricing
	// (docs/semantics.md#budgets); 0, and absent, without pricing.
	Cost float64 `json:"cost,omitempty"`
}

// Add sums o into u. Counts come from model servers: a negative one counts
// as 0, and a sum saturates at math.MaxInt instead of overflowing.
func (u *Usage) Add(o *Usage) {
	if o == nil {
		return
	}
	u.Requests = addCount(u.Requests, o.Requests)
	u.InputTokens = addCount(u.InputTokens, o.InputTokens)
	u.OutputTokens = addCount(u.OutputTokens, o.OutputTokens)
	if o.Cost > 0 && !math.IsInf(o.Cost, 0) {
		u.Cost += o.Cost
	}
}

// Tokens is the input and output tokens together.
func (u *Usage) Tokens() int { return addCount(u.InputTokens, u.OutputTokens) }

func addCount(a, b int) int {
	a, b = max(a, 0), max(b, 0)
	if a > math.MaxInt-b {
		return math.MaxInt
	}
	return a + b
}

// Record is one execution of one agent (docs/cli.md#the-result).
type Record struct {
	TurnNumber int    `json:"turn_number"`
	AgentName  string `json:"agent_name"`
	// Instance and Of are set on the record of an instance of a fan-out
	// agent (docs/semantics.md#fan-out): AgentName is `of[instance]`.
	Instance      *int      `json:"instance,omitempty"`
	Of            string    `json:"of,omitempty"`
	Execution     int       `json:"execution"`
	InputData     any       `json:"input_data"`
	OutputData    any       `json:"output_data"`
	Error         *string   `json:"error"`
	Stderr        string    `json:"stderr,omitempty"` // a script's stderr, its last 4 KiB
	ExecutionTime float64   `json:"execution_time"`
	Timestamp     time.Time `json:"timestamp"`
	StopReason    *string   `json:"stop_reason"`
	Usage         *Usage    `json:"usage"`
	// ModelProfileUsed names the profile that answered an LLM execution's
	// last request when it is a fallback of the agent's own
	// (docs/llm.md#fallbacks); "" otherwise.
	ModelProfileUsed string `json:"model_profile_used,omitempty"`
	// Handles are the failed executions delivered to this one through
	// failure edges, when it succeeded: they count as handled
	// (docs/semantics.md#edges-that-fire-on-failure).
	Handles []ExecutionRef `json:"handles,omitempty"`
	// Child is what an agent that runs a child ensemble ran
	// (docs/semantics.md#ensembles-of-ensembles): its last run, when it
	// loops; Iterations is how many runs a loop made.
	Child      *Child `json:"child,omitempty"`
	Iterations int    `json:"iterations,omitempty"`
}

// Child is the run of a child ensemble inside one execution of its agent.
type Child struct {
	Ensemble            string    `json:"ensemble"` // the child's name
	CompletionReason    string    `json:"completion_reason"`
	TurnCount           int       `json:"turn_count"`
	ConversationHistory []*Record `json:"conversation_history"`
	// Earlier are a loop's earlier iterations, in order (this one is the
	// last).
	Earlier []*Child `json:"earlier_iterations,omitempty"`
}

// New returns the state of a run that has not started.
func New(input string) *State {
	return &State{
		Input:               input,
		AgentExecutionCount: map[string]int{},
		AccumulatedContext:  map[string]any{},
		OutputCount:         map[string]int{},
		Edges:               map[string]map[string]*EdgeState{},
		Memory:              map[string]json.RawMessage{},
	}
}

// Edge returns the bookkeeping of edge target←dep, or nil if it never moved.
func (s *State) Edge(target, dep string) *EdgeState {
	return s.Edges[target][dep]
}

// EdgeForUpdate returns the bookkeeping of edge target←dep, creating it.
func (s *State) EdgeForUpdate(target, dep string) *EdgeState {
	m := s.Edges[target]
	if m == nil {
		m = map[string]*EdgeState{}
		s.Edges[target] = m
	}
	es := m[dep]
	if es == nil {
		es = &EdgeState{}
		m[dep] = es
	}
	return es
}

// AppendRecord adds an execution record, keeping the condition view in step.
func (s *State) AppendRecord(r *Record) {
	s.History = append(s.History, r)
	// Once a condition has read the history, its view grows with it;
	// before, nothing is built (most conditions never read history).
	if s.historyAny != nil && len(s.historyAny) == len(s.History)-1 {
		s.historyAny = append(s.historyAny, s.conditionValue(r))
	}
}

// HistoryValues is the history as the conditions' `history` list: one map per
// record with the keys of docs/cli.md#the-result. Built incrementally, never per turn.
func (s *State) HistoryValues() []any {
	if s.historyAny == nil || len(s.historyAny) != len(s.History) {
		s.historyAny = make([]any, len(s.History), max(len(s.History), 16))
		for i, r := range s.History {
			s.historyAny[i] = s.conditionValue(r)
		}
	}
	return s.historyAny
}

// conditionValue is a record as conditions see it: input_data with its
// dependency outputs resolved (not by reference).
func (s *State) conditionValue(r *Record) any {
	var errv, stop, usage any
	if r.Error != nil {
		errv = *r.Error
	}
	if r.StopReason != nil {
		stop = *r.StopReason
	}
	if r.Usage != nil {
		u := map[string]any{"requests": r.Usage.Requests, "input_tokens": r.Usage.InputTokens, "output_tokens": r.Usage.OutputTokens}
		if r.Usage.Cost > 0 {
			u["cost"] = r.Usage.Cost
		}
		usage = u
	}
	m := map[string]any{
		"turn_number":    r.TurnNumber,
		"agent_name":     r.AgentName,
		"execution":      r.Execution,
		"input_data":     jsonvalue.Plain(s.ResolveInput(r.InputData)),
		"output_data":    r.OutputData,
		"error":          errv,
		"execution_time": r.ExecutionTime,
		"timestamp":      r.Timestamp.UTC().Format(time.RFC3339Nano),
		"stop_reason":    stop,
		"usage":          usage,
		"stderr":         r.Stderr,
		"handles":        handlesValue(r.Handles),
	}
	if r.Of != "" {
		m["instance"], m["of"] = *r.Instance, r.Of
	}
	if r.ModelProfileUsed != "" {
		m["model_profile_used"] = r.ModelProfileUsed
	}
	if r.Child != nil { // a child ensemble's run, as its JSON reads
		var child any
		if b, err := json.Marshal(r.Child); err == nil && json.Unmarshal(b, &child) == nil {
			m["child"] = child
		}
	}
	if r.Iterations != 0 {
		m["iterations"] = r.Iterations
	}
	return m
}
