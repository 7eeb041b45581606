// Package ask is the ask kind: agents that ask a human a question on the
// terminal.
package ask

import (
	"github.com/ensemble-run/ensemble/agent"
	"github.com/ensemble-run/ensemble/runners"
)

// Kind is the ask kind.
type Kind struct{}

var _ agent.Kind = Kind{}

// Name is "ask".
func (Kind) Name() string { return "ask" }

// Runner asks on h's terminal.
func (Kind) Runner(h *agent.Host) agent.Runner {
	return &runners.Ask{In: h.In, Out: h.Out, Interactive: h.Interactive}
}
