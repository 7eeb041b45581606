// Package state is the run's ConversationState (docs/semantics.md#state):
// plain data that the resolver reads, the engine updates at the end of
// each turn, and durable runs save. Only file.go and lock.go do I/O: the
// JSON state file, its Save, Load and lock (docs/semantics.md#durable-runs).
//
// Part of the public API (go doc github.com/ensemble-run/ensemble).
package state

import (
	"encoding/json"
	"math"
	"slices"
	"time"

	"github.com/ensemble-run/ensemble/internal/jsonvalue"
)

// State is the ConversationState. Its input and turn count are plain
// fields; what the turns accumulate (the counts, the context, the edges'
// bookkeeping, the agent requests, the memories, the history, the
// warnings) is reached through methods: views to read, which their callers
// must not change, and the writes of a turn's commit (CountExecution,
// SetOutput, Consume, ...), which the engine's committer alone makes.
// Contents and Restore are the whole of it, for what saves and loads it.
type State struct {
	Input     string
	TurnCount int

	executions map[string]int                   // agent → its executions
	context    map[string]any                   // state key → the latest output
	history    []*Record                        // every execution, in order
	outputs    map[string]int                   // agent → its successful outputs: the "sequence" of its latest output
	edges      map[string]map[string]*EdgeState // target agent → dependency → bookkeeping
	pending    []AgentRequest                   // the agent requests for the next turn
	memory     map[string]json.RawMessage       // per agent, owned by its runner (an LLM agent's conversation)
	warnings   []Warning
	skips      map[string]int // agent → its skips, counted from the history

	historyAny []any            // history as condition values, appended incrementally
	byAgent    map[string][]int // agent → indexes of its records in history
	indexed    int              // records of history in byAgent
}

// Contents is the whole of a State, as the state file and the state
// database hold it (docs/cli.md#the-result names its fields).
type Contents struct {
	Input               string                           `json:"input"`
	TurnCount           int                              `json:"turn_count"`
	AgentExecutionCount map[string]int                   `json:"agent_execution_count"`
	AccumulatedContext  map[string]any                   `json:"accumulated_context"`
	History             []*Record                        `json:"conversation_history"`
	OutputCount         map[string]int                   `json:"output_count"`
	Edges               map[string]map[string]*EdgeState `json:"edges"`
	Pending             []AgentRequest                   `json:"pending_requests,omitempty"`
	Memory              map[string]json.RawMessage       `json:"memory,omitempty"`
	Warnings            []Warning                        `json:"warnings,omitempty"`
}

// Restore is the state whose contents are c: it takes c's maps and slices
// as they are (and makes those that are nil).
func Restore(c Contents) *State {
	s := &State{Input: c.Input, TurnCount: c.TurnCount, executions: c.AgentExecutionCount, context: c.AccumulatedContext,
		history: c.History, outputs: c.OutputCount, edges: c.Edges, pending: c.Pending, memory: c.Memory, warnings: c.Warnings}
	s.fill()
	return s
}

// fill makes the maps that are nil.
func (s *State) fill() {
	if s.executions == nil {
		s.executions = map[string]int{}
	}
	if s.context == nil {
		s.context = map[string]any{}
	}
	if s.outputs == nil {
		s.outputs = map[string]int{}
	}
	if s.edges == nil {
		s.edges = map[string]map[string]*EdgeState{}
	}
	if s.memory == nil {
		s.memory = map[string]json.RawMessage{}
	}
	if s.skips == nil {
		s.skips = map[string]int{}
		for _, r := range s.history {
			if r != nil && r.Skipped {
				s.skips[r.AgentName]++
			}
		}
	}
}

// Contents are the state's contents: its own maps and slices, to read, not
// to change.
func (s *State) Contents() Contents {
	return Contents{Input: s.Input, TurnCount: s.TurnCount, AgentExecutionCount: s.executions, AccumulatedContext: s.context,
		History: s.history, OutputCount: s.outputs, Edges: s.edges, Pending: s.pending, Memory: s.memory, Warnings: s.warnings}
}

// MarshalJSON writes the state's Contents.
func (s *State) MarshalJSON() ([]byte, error) { return json.Marshal(s.Contents()) }

// UnmarshalJSON reads Contents into s.
func (s *State) UnmarshalJSON(b []byte) error {
	var c Contents
	if err := json.Unmarshal(b, &c); err != nil {
		return err
	}
	*s = *Restore(c)
	return nil
}

// Executions is how many times agent ran.
func (s *State) Executions(agent string) int { return s.executions[agent] }

// ExecutionCounts are the executions of every agent that ran (a view).
func (s *State) ExecutionCounts() map[string]int { return s.executions }

// Context is the accumulated context: each agent's latest output under its
// state key (a view, which the requests of a turn share).
func (s *State) Context() map[string]any { return s.context }

// History is every execution's record, in order (a view).
func (s *State) History() []*Record { return s.history[:len(s.history):len(s.history)] }

// Skips is how many times agent was skipped (docs/semantics.md#guards-that-skip):
// its records marked skipped, which are not executions.
func (s *State) Skips(agent string) int { return s.skips[agent] }

// Outputs is how many successful outputs agent produced: the sequence
// number of its latest output.
func (s *State) Outputs(agent string) int { return s.outputs[agent] }

// Edges is the bookkeeping of the edges of target, by dependency (a view;
// nil when none ever moved).
func (s *State) Edges(target string) map[string]*EdgeState { return s.edges[target] }

// Pending are the agent requests the next turn honours (a view).
func (s *State) Pending() []AgentRequest { return s.pending }

// Memory is what agent's runner kept from its previous executions; nil
// when none.
func (s *State) Memory(agent string) json.RawMessage { return s.memory[agent] }

// Warnings are the run's warnings so far (a view).
func (s *State) Warnings() []Warning { return s.warnings }

// The writes of a turn's commit, which the engine's committer makes.

// CountExecution counts an execution of agent.
func (s *State) CountExecution(agent string) { s.executions[agent]++ }

// SetOutput records a successful output of agent, under its state key.
func (s *State) SetOutput(agent, key string, output any) {
	s.context[key] = output
	s.outputs[agent]++
}

// SetMemory replaces what agent's runner keeps.
func (s *State) SetMemory(agent string, m json.RawMessage) { s.memory[agent] = m }

// Request queues an agent request for the next turn.
func (s *State) Request(q AgentRequest) { s.pending = append(s.pending, q) }

// Warn records a warning.
func (s *State) Warn(w Warning) { s.warnings = append(s.warnings, w) }

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
	// Kind is what the warning is about: "" for a condition that failed
	// at run time; WarnMissingRead or WarnNullMessage
	// (docs/semantics.md#reads-of-missing-keys).
	Kind string `json:"kind,omitempty"`
	// Path is the read of a missing key, as written
	// (context.get_diff.touches_cod), and Suggestion the key its value
	// has that is nearest (touches_code); set for WarnMissingRead.
	Path       string `json:"path,omitempty"`
	Suggestion string `json:"suggestion,omitempty"`
}

// Kinds of warnings (Warning.Kind).
const (
	// WarnMissingRead: an expression read a key its value does not have.
	WarnMissingRead = "missing_read"
	// WarnNullMessage: the template that is an LLM agent's whole message
	// (its input or prompt) gave null.
	WarnNullMessage = "null_message"
)

// Strict reports whether w is a warning `run --strict` ends a run on: a
// read of a missing key, or a null message.
func (w *Warning) Strict() bool { return w.Kind == WarnMissingRead || w.Kind == WarnNullMessage }

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
	Instance  *int   `json:"instance,omitempty"`
	Of        string `json:"of,omitempty"`
	Execution int    `json:"execution"`
	// Skipped marks the record of a skip (docs/semantics.md#guards-that-skip):
	// the agent did not run. Its execution is 0, it has no output nor
	// error, and its input_data says why.
	Skipped       bool      `json:"skipped,omitempty"`
	InputData     any       `json:"input_data"`
	OutputData    any       `json:"output_data"`
	Error         *string   `json:"error"`
	Stderr        string    `json:"stderr,omitempty"` // a script's stderr, its last 4 KiB
	ExecutionTime float64   `json:"execution_time"`
	Timestamp     time.Time `json:"timestamp"`
	StopReason    *string   `json:"stop_reason"`
	Usage         *Usage    `json:"usage"`
	// Handles are the failed executions delivered to this one through
	// failure edges, when it succeeded: they count as handled
	// (docs/semantics.md#edges-that-fire-on-failure).
	Handles []ExecutionRef `json:"handles,omitempty"`
	// Details are what the agent's kind recorded beyond these fields: the
	// members of the record's JSON object after them (see Detail).
	Details Details `json:"-"`
}

// ChildDetail is the detail of a record whose execution ran a child
// ensemble (docs/semantics.md#ensembles-of-ensembles): the Child, its last
// run when it loops.
const ChildDetail = "child"

// Child is the run of a child ensemble the execution ran (its ChildDetail);
// nil when it ran none, or the detail is not one.
func (r *Record) Child() *Child {
	var c *Child
	if ok, err := r.Details.Decode(ChildDetail, &c); !ok || err != nil {
		return nil
	}
	return c
}

// MarshalJSON writes r as AppendIndent does, compact.
func (r *Record) MarshalJSON() ([]byte, error) { return r.AppendIndent(nil, "", "") }

// UnmarshalJSON reads a record, its details (RegisterDetail) included.
func (r *Record) UnmarshalJSON(b []byte) error {
	type plain Record
	if err := json.Unmarshal(b, (*plain)(r)); err != nil {
		return err
	}
	d, err := readDetails(b)
	r.Details = d
	return err
}

// Runs are c's runs in order: a loop's earlier iterations, then c.
func (c *Child) Runs() []*Child { return append(slices.Clone(c.Earlier), c) }

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
	s := &State{Input: input}
	s.fill()
	return s
}

// Edge returns the bookkeeping of edge target←dep, or nil if it never moved
// (to read, not to change).
func (s *State) Edge(target, dep string) *EdgeState {
	return s.edges[target][dep]
}

// AppendRecord adds an execution record, keeping the condition view in step.
func (s *State) AppendRecord(r *Record) {
	s.history = append(s.history, r)
	if r.Skipped {
		if s.skips == nil {
			s.skips = map[string]int{}
		}
		s.skips[r.AgentName]++
	}
	// Once a condition has read the history, its view grows with it;
	// before, nothing is built (most conditions never read history).
	if s.historyAny != nil && len(s.historyAny) == len(s.history)-1 {
		s.historyAny = append(s.historyAny, s.conditionValue(len(s.history)-1))
	}
}

// HistoryValues is the history as the conditions' `history` list: one map per
// record with the keys of docs/cli.md#the-result. Built incrementally, never per turn.
func (s *State) HistoryValues() []any {
	if s.historyAny == nil || len(s.historyAny) != len(s.history) {
		s.historyAny = make([]any, len(s.history), max(len(s.history), 16))
		for i := range s.history {
			s.historyAny[i] = s.conditionValue(i)
		}
	}
	return s.historyAny
}

// isFanOut is whether r is the record of a fan-out agent's execution:
// its input_data has fan_out (docs/semantics.md#fan-out).
func isFanOut(r *Record) bool {
	m, ok := r.InputData.(map[string]any)
	if !ok {
		return false
	}
	_, ok = m["fan_out"]
	return ok
}

// instanceValues are the views of the instances of the fan-out execution
// recorded at i: the records just before it whose of is its agent, in item
// order.
func (s *State) instanceValues(i int) []any {
	r := s.history[i]
	first := i
	for first > 0 {
		p := s.history[first-1]
		if p.Of != r.AgentName || p.Execution != r.Execution || p.TurnNumber != r.TurnNumber {
			break
		}
		first--
	}
	out := make([]any, i-first)
	copy(out, s.historyAny[first:i])
	return out
}

// conditionValue is the record at i as conditions see it: input_data with
// its dependency outputs resolved (not by reference), its status ("ok" or
// "failed"), and for a fan-out's execution its instances: the views of its
// instances' records, in item order (docs/semantics.md#conditions). The
// views of the records before i are built.
func (s *State) conditionValue(i int) any {
	r := s.history[i]
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
	m["status"] = "ok"
	if r.Error != nil {
		m["status"] = "failed"
	}
	// Every record has the keys some records have (null, false where it
	// has none): reading one is no read of a missing key
	// (docs/semantics.md#reads-of-missing-keys).
	m["skipped"], m["instance"], m["of"], m["instances"] = false, nil, nil, nil
	if r.Skipped {
		m["status"], m["skipped"] = "skipped", true
	}
	if r.Of != "" {
		m["instance"], m["of"] = *r.Instance, r.Of
	} else if isFanOut(r) {
		m["instances"] = s.instanceValues(i)
	}
	for _, d := range r.Details { // as their JSON reads
		var v any
		if json.Unmarshal(d.Value, &v) == nil {
			m[d.Key] = v
		}
	}
	return m
}
