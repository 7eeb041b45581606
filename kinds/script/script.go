// Package script is the script kind: agents that run an executable
// (docs/semantics.md#script-agents).
//
// Part of the public API (go doc github.com/ensemble-run/ensemble).
package script

import (
	"github.com/ensemble-run/ensemble/agent"
	"github.com/ensemble-run/ensemble/ensemble"
)

// Kind is the script kind.
type Kind struct{}

var _ agent.Kind = Kind{}

// String is "script".
func (Kind) String() string { return "script" }

// Key is script.
func (Kind) Key() string { return "script" }

// Fields are the script agent's own fields.
func (Kind) Fields() []string { return []string{"parameters", "env", "allow_outside", "protocol"} }

// The values of protocol: what the script reads on stdin.
const (
	ProtocolEnsemble = "ensemble" // the default: docs/semantics.md#script-agents
	ProtocolLLMOrc   = "llm-orc"  // llm-orc's script input: docs/llm-orc.md#scripts
)

// Spec is what a script agent has of its own (Agent.Spec).
type Spec struct {
	Script     string            // as written
	Path       string            // absolute path of Script
	Parameters map[string]any    // given on stdin
	Env        map[string]string // added to the environment
	Protocol   string            // ProtocolEnsemble or ProtocolLLMOrc
}

// SpecOf is a's Spec; an empty one when a has none.
func SpecOf(a *ensemble.Agent) *Spec {
	if s, ok := a.Spec.(*Spec); ok {
		return s
	}
	return &Spec{}
}

// Decode decodes script (a path under the file's folder unless
// allow_outside), parameters and env.
func (Kind) Decode(f *ensemble.Fields, a *ensemble.Agent) {
	s := &Spec{}
	if f.Has("script") {
		s.Script, s.Path = f.Script("script", f.Bool("allow_outside"))
		f.Require("script", s.Script == "")
	}
	s.Parameters = f.Object("parameters")
	s.Env = f.Env("env")
	s.Protocol = ProtocolEnsemble
	if f.Has("protocol") {
		switch p := f.String("protocol"); p {
		case ProtocolEnsemble, ProtocolLLMOrc:
			s.Protocol = p
		default:
			f.Bad("protocol", "must be %q or %q, not %q", ProtocolEnsemble, ProtocolLLMOrc, p)
		}
	}
	a.Spec = s
}

// Describe: the script, as written.
func (Kind) Describe(_ *ensemble.Ensemble, a *ensemble.Agent) []string {
	return []string{"script: " + SpecOf(a).Script}
}

// Shape: a blue box.
func (Kind) Shape() agent.Shape {
	return agent.Shape{
		Mermaid:      [2]string{"[", "]"},
		MermaidClass: "fill:#e8f0fe,stroke:#4a6fa5,color:#1a1a1a",
		DOT:          `shape=box, fillcolor="#e8f0fe", color="#4a6fa5"`,
	}
}

// Runner runs the agent's script with h's environment.
func (Kind) Runner(h *agent.Host) agent.Runner { return &Runner{Environ: h.Environ} }

// InputData is the stdin object less context (docs/cli.md#the-result).
func (Kind) InputData(req *agent.Request) map[string]any { return inputData(req) }
