// Package llm is the LLM kind: agents that talk to a model (docs/llm.md).
// The runner itself, with its providers and tool loop, is package
// runners/llm.
package llm

import (
	"github.com/ensemble-run/ensemble/agent"
	"github.com/ensemble-run/ensemble/runners/llm"
)

// Kind is the LLM kind.
type Kind struct{}

var _ agent.Kind = Kind{}

// Name is "llm".
func (Kind) Name() string { return "llm" }

// Runner talks to the models, finding API keys with h.LookupEnv; its tools
// inherit h.Environ. It also plays simulated users (agent.Simulator).
func (Kind) Runner(h *agent.Host) agent.Runner {
	return llm.New(llm.Options{LookupEnv: h.LookupEnv, Environ: h.Environ, Stream: h.Stream})
}
