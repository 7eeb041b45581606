package llm

import (
	"cmp"
	"slices"
	"strings"

	"github.com/ensemble-run/ensemble/agent"
	"github.com/ensemble-run/ensemble/ensemble"
	"github.com/ensemble-run/ensemble/graph"
)

// Kind is the LLM kind: agents that talk to a model.
type Kind struct{}

var _ agent.Kind = Kind{}

// String is "llm".
func (Kind) String() string { return "llm" }

// Key is model_profile.
func (Kind) Key() string { return "model_profile" }

// Fields are the LLM agent's own fields.
func (Kind) Fields() []string {
	return []string{"prompt", "output_format", "tools", "max_steps", "tool_parallel", "context_window"}
}

var outputFormats = []string{"text", "json"}

// Decode decodes the model profile (declared in the file or a profiles
// file), the prompt, the output format, the tools (declared in the file)
// and the limits of the tool loop, with their defaults.
func (Kind) Decode(f *ensemble.Fields, a *ensemble.Agent) {
	if f.Has("model_profile") {
		a.ModelProfile = f.ModelProfile("model_profile")
		f.Require("model_profile", a.ModelProfile == "")
	}
	a.Prompt = f.String("prompt")
	a.OutputFormat = f.String("output_format")
	if f.Has("output_format") && !slices.Contains(outputFormats, a.OutputFormat) {
		f.Bad("output_format", "must be text or json, got %q", a.OutputFormat)
	}
	a.Tools = f.Tools("tools")
	a.MaxSteps = f.Positive("max_steps")
	a.ToolParallel = f.Positive("tool_parallel")
	a.ContextWindow = f.ContextWindow("context_window")
	if a.Kind == (Kind{}) {
		a.OutputFormat = cmp.Or(a.OutputFormat, "text")
		a.MaxSteps = cmp.Or(a.MaxSteps, ensemble.DefaultMaxSteps)
		a.ToolParallel = cmp.Or(a.ToolParallel, ensemble.DefaultToolParallel)
	}
}

// Guarded: an LLM agent reaches a model, which costs money.
func (Kind) Guarded() bool { return true }

// JSONReply: an agent with output_format: json must reply with JSON.
func (Kind) JSONReply(a *ensemble.Agent) bool { return a.OutputFormat == "json" }

// KeepsMemory: an LLM agent continues its conversation.
func (Kind) KeepsMemory() bool { return true }

// Describe: the model profile and its model, then the tools.
func (Kind) Describe(e *ensemble.Ensemble, a *ensemble.Agent) []string {
	what := "llm: " + a.ModelProfile
	if p := e.Models[a.ModelProfile]; p != nil && p.Model != "" {
		what += " (" + p.Model + ")"
	}
	lines := []string{what}
	if len(a.Tools) > 0 {
		lines = append(lines, "tools: "+strings.Join(a.Tools, ", "))
	}
	return lines
}

// Shape: a green rounded box.
func (Kind) Shape() graph.Shape {
	return graph.Shape{
		Mermaid:      [2]string{"(", ")"},
		MermaidClass: "fill:#e6f4ea,stroke:#3c8d5a,color:#1a1a1a",
		DOT:          `shape=box, style="rounded,filled", fillcolor="#e6f4ea", color="#3c8d5a"`,
	}
}

// Runner talks to the models, finding API keys with h.LookupEnv; its tools
// inherit h.Environ. It also plays simulated users (agent.Simulator).
func (Kind) Runner(h *agent.Host) agent.Runner {
	return New(Options{LookupEnv: h.LookupEnv, Environ: h.Environ, Stream: h.Stream})
}
