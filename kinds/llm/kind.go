package llm

import (
	"cmp"
	"slices"
	"strings"

	"github.com/ensemble-run/ensemble/agent"
	"github.com/ensemble-run/ensemble/ensemble"
	"github.com/ensemble-run/ensemble/internal/jsonvalue"
	"github.com/ensemble-run/ensemble/state"
)

// ProfileUsedDetail is the detail of an LLM agent's record that names the
// fallback profile that answered its last request, when it was not the
// agent's own (docs/llm.md#fallbacks).
const ProfileUsedDetail = "model_profile_used"

// ToolCallsDetail is the detail of an LLM agent's record that lists the
// tool calls its execution ran, in the order the model issued them
// (docs/llm.md#tools): []ToolCallRecord.
const ToolCallsDetail = "tool_calls"

func init() { state.RegisterDetail(ProfileUsedDetail, ToolCallsDetail) }

// ToolCallRecord is one tool call of an execution, as its record keeps it.
type ToolCallRecord struct {
	// Tool is the tool's name in the ensemble file: SERVER.TOOL for a tool
	// of an MCP server, the name of a tool of the file's tools:, or the
	// name the model called when no tool has it.
	Tool string `json:"tool"`
	// Failed is whether the call's result was an error (an unknown tool,
	// invalid arguments, a failure of the tool).
	Failed bool `json:"failed,omitempty"`
}

// Kind is the LLM kind: agents that talk to a model. Stream, its own
// option, streams model replies as text_delta events (kinds.Registry.With
// sets it).
type Kind struct{ Stream bool }

var _ agent.Kind = Kind{}

// String is "llm".
func (Kind) String() string { return "llm" }

// Key is model_profile.
func (Kind) Key() string { return "model_profile" }

// Fields are the LLM agent's own fields.
func (Kind) Fields() []string {
	return []string{"prompt", "output_format", "tools", "max_steps", "tool_parallel", "context_window", "output_repairs"}
}

var outputFormats = []string{"text", "json"}

// Spec is what an LLM agent has of its own (Agent.Spec).
type Spec struct {
	ModelProfile string
	Prompt       string // system prompt after the profile's
	// PromptTemplate is Prompt when it has `{{ }}` placeholders: the
	// engine evaluates it for each execution (agent.Request.Templates).
	PromptTemplate *ensemble.Template
	OutputFormat   string   // "text" (default) or "json"
	Tools          []string // tool names
	MaxSteps       int      // model requests per execution; default 20
	ToolParallel   int      // tool calls of one reply run at once; default 8
	ContextWindow  *ensemble.ContextWindow
	// OutputRepairs is how many repair turns a reply that fails the
	// agent's output_schema gets (docs/llm.md#output-schemas); default 1.
	OutputRepairs int
}

// SpecOf is a's Spec; an empty one when a has none.
func SpecOf(a *ensemble.Agent) *Spec {
	if s, ok := a.Spec.(*Spec); ok {
		return s
	}
	return &Spec{}
}

// Decode decodes the model profile (declared in the file or a profiles
// file), the prompt, the output format, the tools (declared in the file)
// and the limits of the tool loop, with their defaults.
func (Kind) Decode(f *ensemble.Fields, a *ensemble.Agent) {
	s := &Spec{}
	if f.Has("model_profile") {
		s.ModelProfile = f.ModelProfile("model_profile")
		f.Require("model_profile", s.ModelProfile == "")
	}
	s.Prompt, s.PromptTemplate = f.Template("prompt")
	s.OutputFormat = f.String("output_format")
	if f.Has("output_format") && !slices.Contains(outputFormats, s.OutputFormat) {
		f.Bad("output_format", "must be text or json, got %q", s.OutputFormat)
	}
	s.Tools = f.Tools("tools")
	s.MaxSteps = f.Positive("max_steps")
	s.ToolParallel = f.Positive("tool_parallel")
	s.ContextWindow = f.ContextWindow("context_window")
	s.OutputRepairs = decodeRepairs(f, s.OutputFormat)
	if a.Kind == (Kind{}) {
		s.OutputFormat = cmp.Or(s.OutputFormat, "text")
		s.MaxSteps = cmp.Or(s.MaxSteps, ensemble.DefaultMaxSteps)
		s.ToolParallel = cmp.Or(s.ToolParallel, ensemble.DefaultToolParallel)
	}
	a.Spec = s
}

// agentPrompt is the agent's prompt for req's execution: its template's
// text when it has placeholders, evaluated by the engine.
func agentPrompt(req *agent.Request, s *Spec) string {
	if v, ok := req.Template("prompt"); ok {
		return jsonvalue.Text(v)
	}
	return s.Prompt
}

// Tools are the names of the tools a may call.
func (Kind) Tools(a *ensemble.Agent) []string { return SpecOf(a).Tools }

// Guarded: an LLM agent reaches a model, which costs money.
func (Kind) Guarded() bool { return true }

// ModelProfile is the profile a calls first.
func (Kind) ModelProfile(a *ensemble.Agent) string { return SpecOf(a).ModelProfile }

// JSONReply: an agent with output_format: json must reply with JSON.
// An output_schema implies it (docs/llm.md#output-schemas).
func (Kind) JSONReply(a *ensemble.Agent) bool {
	return SpecOf(a).OutputFormat == "json" || a.OutputSchema != nil
}

// KeepsMemory: an LLM agent continues its conversation.
func (Kind) KeepsMemory() bool { return true }

// Describe: the model profile and its model, then the tools.
func (Kind) Describe(e *ensemble.Ensemble, a *ensemble.Agent) []string {
	s := SpecOf(a)
	what := "llm: " + s.ModelProfile
	if p := e.Models[s.ModelProfile]; p != nil && p.Model != "" {
		what += " (" + p.Model + ")"
	}
	lines := []string{what}
	if len(s.Tools) > 0 {
		lines = append(lines, "tools: "+strings.Join(s.Tools, ", "))
	}
	return lines
}

// Shape: a green rounded box.
func (Kind) Shape() agent.Shape {
	return agent.Shape{
		Mermaid:      [2]string{"(", ")"},
		MermaidClass: "fill:#e6f4ea,stroke:#3c8d5a,color:#1a1a1a",
		DOT:          `shape=box, style="rounded,filled", fillcolor="#e6f4ea", color="#3c8d5a"`,
	}
}

// Runner talks to the models, finding API keys with h.LookupEnv; its tools
// inherit h.Environ. It also plays simulated users (agent.Simulator).
func (k Kind) Runner(h *agent.Host) agent.Runner {
	return New(Options{LookupEnv: h.LookupEnv, Environ: h.Environ, Secrets: h.Secrets, Stream: k.Stream})
}
