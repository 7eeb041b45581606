// Package script is the script kind: agents that run an executable
// (docs/semantics.md#script-agents).
package script

import (
	"github.com/ensemble-run/ensemble/agent"
	"github.com/ensemble-run/ensemble/runners"
)

// Kind is the script kind.
type Kind struct{}

var _ agent.Kind = Kind{}

// Name is "script".
func (Kind) Name() string { return "script" }

// Runner runs the agent's script with h's environment.
func (Kind) Runner(h *agent.Host) agent.Runner { return &runners.Script{Environ: h.Environ} }
