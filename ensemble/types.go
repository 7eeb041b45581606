// Package ensemble is the ensemble file format: its types, strict loading and
// validation. Every problem found at load time is reported with FILE:LINE:COL.
//
// Part of the public API (go doc github.com/ensemble-run/ensemble).
package ensemble

import (
	"time"
)

// Pos is a position in a YAML file (1-based).
type Pos struct {
	Line   int
	Column int
}

// Kind is a kind of agent (script, llm, ask, ...) as the loader needs it.
// Each kind is supplied by a package of its own; LoadOptions.Kinds lists the
// kinds a file may use, and Agent.Kind is the agent's. Other packages ask
// more of a kind through interfaces of their own (how it is drawn, whether
// it reaches a model, ...), never by switching on kinds. Kinds are compared
// with ==, so a kind's value must be comparable (an empty struct will do).
type Kind interface {
	// String is the kind's name in messages: "script", "llm", "ask".
	String() string
	// Key is the field whose presence makes an agent of this kind:
	// script, model_profile, ask. It is decoded by Decode.
	Key() string
	// Fields are the other fields that only agents of this kind take, in
	// the order the format lists them.
	Fields() []string
	// Decode decodes the kind's fields of one agent (Key and Fields) into
	// a, reporting every problem through f.
	Decode(f *Fields, a *Agent)
}

// Defaults of docs/format.md, docs/semantics.md#limits.
const (
	DefaultMaxTotalTurns      = 20
	DefaultTimeout            = 300 * time.Second
	DefaultParallelAgentLimit = 5
	DefaultMaxSteps           = 20
	DefaultToolParallel       = 8
	DefaultMaxTurns           = 1
)

// Ensemble is a loaded, validated ensemble file.
type Ensemble struct {
	Path        string // absolute path of the file
	Dir         string // its folder: scripts resolve and run here
	Hash        string // sha256 (hex) of the file's bytes
	Version     int
	Name        string
	Description string
	Input       string // default input
	// Output is output: the agent whose output is the ensemble's result
	// for its callers (docs/format.md#what-an-ensemble-returns); "" when
	// the file has none, and the result is the whole final state.
	Output string

	Models map[string]*ModelProfile // file profiles merged with --profiles / $ENSEMBLE_PROFILES
	Tools  []*Tool
	// MCPServers are the servers of MCP tools by name, the file's own and
	// those inherited from its parent (docs/format.md#mcp-servers).
	MCPServers map[string]*MCPServer
	Agents     []*Agent // in file order; Agent.Index is the position here
	// Kinds are the kinds of agent the file was loaded with
	// (LoadOptions.Kinds), in their order.
	Kinds []Kind

	Limits Limits

	// Expect are the file's expect:, the expectations a completed run
	// must meet (docs/semantics.md#expectations), in file order.
	Expect []*Expectation

	// Triggers are the file's triggers:, what starts its runs when
	// `ensemble serve` serves it (docs/format.md#triggers), in file order.
	Triggers []*Trigger

	// Warnings are problems that do not stop the file from loading, each
	// FILE:LINE:COL: message (docs/format.md#warnings).
	Warnings []*Error

	agentIndex map[string]*Agent
	toolIndex  map[string]*Tool
	// treeKeys are the secret variables of every file of the load (the top
	// file and its child ensembles: keys.go), set when it ends.
	treeKeys []string
}

// Agent returns the agent with that name, or nil.
func (e *Ensemble) Agent(name string) *Agent { return e.agentIndex[name] }

// Tool returns the tool with that name, or nil.
func (e *Ensemble) Tool(name string) *Tool { return e.toolIndex[name] }

// Index rebuilds the name lookups; call it after building an Ensemble by hand.
func (e *Ensemble) Index() {
	e.agentIndex = make(map[string]*Agent, len(e.Agents))
	for i, a := range e.Agents {
		a.Index = i
		e.agentIndex[a.Name] = a
	}
	e.toolIndex = make(map[string]*Tool, len(e.Tools))
	for _, t := range e.Tools {
		e.toolIndex[t.Name] = t
	}
}

// Limits are the run's conversation_limits (docs/semantics.md#limits).
type Limits struct {
	MaxTotalTurns      int            // default 20
	MaxAgentExecutions map[string]int // per agent; absent = unlimited
	Timeout            time.Duration  // whole run; default 300s
	ParallelAgentLimit int            // default 5
	// Budget caps the run's spend on model requests (max_tokens,
	// max_requests, max_cost); nil = none (docs/semantics.md#budgets).
	Budget *Budget
}

// Agent is one agent of the ensemble.
type Agent struct {
	Pos   Pos
	Index int // position in Ensemble.Agents
	Name  string
	Kind  Kind // nil only in a file that failed to load
	// Spec is what the agent has of its kind's own fields (a script, a
	// model profile, a question...): its type belongs to the kind's
	// package, which reads it.
	Spec any

	Dependencies []*Dependency
	// TriggerAll is trigger: all: the agent waits until every required
	// dependency has an output it has not consumed (docs/semantics.md#joins-that-wait).
	TriggerAll   bool
	triggerSet   bool // trigger: written in the file (any or all)
	Conversation Conversation
	Timeout      time.Duration // per execution; 0 = bounded only by the run

	FanOut *FanOut // fan_out: one execution per item (docs/semantics.md#fan-out)
	// Budget caps this agent's spend over the run; nil = none.
	Budget *Budget
	// Retry tries failed executions again; nil = once (docs/semantics.md#retries).
	Retry *Retry
	// OutputSchema is output_schema: the JSON Schema its outputs must
	// satisfy (docs/format.md#output-schemas); nil when absent.
	OutputSchema *OutputSchema
	// Input is input: what the agent receives instead of the labelled
	// text (docs/semantics.md#what-an-agent-receives); nil when absent.
	Input *Template
	// Templates are every template of the agent, Input and its kind's
	// (an LLM agent's prompt), in the order they were decoded: the engine
	// evaluates them for each execution.
	Templates []*Template
	// When is when: a guard; an agent that would run while it is false is
	// skipped (docs/semantics.md#guards-that-skip). "" when absent.
	When        string
	WhenProgram CompiledCondition // compiled When; none when When is ""
}

// StateKey is where the agent's output lives in the accumulated context.
func (a *Agent) StateKey() string {
	if a.Conversation.StateKey != "" {
		return a.Conversation.StateKey
	}
	return a.Name
}

// Conversation is an agent's conversation block.
type Conversation struct {
	MaxTurns             int // default 1
	StateKey             string
	TriggersConversation bool
}

// Dependency is an edge Agent ← AgentName.
type Dependency struct {
	Pos           Pos
	AgentName     string
	Condition     string            // source text; "" = always true
	Program       CompiledCondition // compiled Condition; none when Condition is ""
	RequiresAll   bool              // true (default): required; false: optional
	MaxExecutions int               // how often the edge may trigger; 0 = unlimited
	// Select is what the edge delivers instead of the whole output: an
	// expression over output (docs/semantics.md#choosing-what-an-edge-delivers).
	Select        string
	SelectProgram CompiledSelect // compiled Select; none when Select is ""
	// OnFailure is on: failure: the edge is satisfied by the dependency's
	// failed executions, not its outputs (docs/semantics.md#edges-that-fire-on-failure).
	OnFailure bool
	// OnAlways is on: always: the edge is satisfied by every execution of
	// the dependency, and delivers its output or its error, whichever came
	// last (docs/semantics.md#edges-that-fire-on-failure).
	OnAlways bool
}

// ModelProfile is a named model configuration (docs/format.md#model-profiles).
type ModelProfile struct {
	Pos           Pos
	File          string // where it was declared
	Name          string
	Provider      string // openai | anthropic | ollama
	Model         string
	BaseURL       string
	APIKeyEnv     string // the NAME of the variable holding the key
	Temperature   *float64
	MaxTokens     int
	SystemPrompt  string
	Timeout       time.Duration
	ContextWindow *ContextWindow
	// Pricing is what its tokens cost; nil = free (docs/semantics.md#budgets).
	Pricing *Pricing
	// Fallback names the profiles a request goes to, in order, when this
	// one fails with a 5xx, a timeout or a connection error (docs/llm.md#fallbacks).
	Fallback []string
	// Options are extra fields of every request body, merged at its top
	// level as JSON (docs/format.md#model-profiles): reasoning_effort,
	// thinking… Never a field the run sets itself (ReservedOption).
	Options map[string]any

	checkFallback func(map[string]*ModelProfile) // set while loading
}

// ContextWindow trims what is sent to a model (docs/llm.md#messages-and-memory).
type ContextWindow struct {
	MaxTokens   int
	MaxMessages int
	Strategy    string // oldest_first | middle_out | recent_turns
	RecentTurns int
}

// Tool is a tool LLM agents may call (docs/llm.md#tools).
type Tool struct {
	Pos         Pos
	Name        string
	Description string
	Parameters  map[string]any // JSON Schema of the arguments object
	Script      string
	ScriptPath  string
	Timeout     time.Duration
}
