// Package script is the script kind: agents that run an executable
// (docs/semantics.md#script-agents).
package script

import (
	"github.com/ensemble-run/ensemble/agent"
	"github.com/ensemble-run/ensemble/ensemble"
	"github.com/ensemble-run/ensemble/graph"
)

// Kind is the script kind.
type Kind struct{}

var _ agent.Kind = Kind{}

// String is "script".
func (Kind) String() string { return "script" }

// Key is script.
func (Kind) Key() string { return "script" }

// Fields are the script agent's own fields.
func (Kind) Fields() []string { return []string{"parameters", "env", "allow_outside"} }

// Decode decodes script (a path under the file's folder unless
// allow_outside), parameters and env.
func (Kind) Decode(f *ensemble.Fields, a *ensemble.Agent) {
	if f.Has("script") {
		a.Script, a.ScriptPath = f.Script("script", f.Bool("allow_outside"))
		f.Require("script", a.Script == "")
	}
	a.Parameters = f.Object("parameters")
	a.Env = f.Env("env")
}

// Describe: the script, as written.
func (Kind) Describe(_ *ensemble.Ensemble, a *ensemble.Agent) []string {
	return []string{"script: " + a.Script}
}

// Shape: a blue box.
func (Kind) Shape() graph.Shape {
	return graph.Shape{
		Mermaid:      [2]string{"[", "]"},
		MermaidClass: "fill:#e8f0fe,stroke:#4a6fa5,color:#1a1a1a",
		DOT:          `shape=box, fillcolor="#e8f0fe", color="#4a6fa5"`,
	}
}

// Runner runs the agent's script with h's environment.
func (Kind) Runner(h *agent.Host) agent.Runner { return &Runner{Environ: h.Environ} }

// InputData is the stdin object less context (docs/cli.md#the-result).
func (Kind) InputData(req *agent.Request) map[string]any { return inputData(req) }
