// Package runners executes one agent once: script agents (docs/semantics.md#script-agents), LLM
// agents (docs/llm.md), ask agents, and injected responses (docs/testing.md#the-responses-file).
package runners

import (
	"errors"
	"strings"

	"github.com/ensemble-run/ensemble/agent"
)

// The contract of package agent, under the names this package has always
// used for them.
type (
	Request    = agent.Request
	Result     = agent.Result
	Runner     = agent.Runner
	RunnerFunc = agent.RunnerFunc
)

// ParseOutput turns raw agent output into an output value (docs/semantics.md#state): text
// that parses as JSON is stored parsed, anything else as a string (trimmed of
// surrounding white space). JSON that nests deeper than MaxOutputDepth is
// ErrTooDeep.
func ParseOutput(text string) (any, error) {
	trimmed := strings.TrimSpace(text)
	v, err := decodeOutput([]byte(trimmed))
	switch {
	case err == nil:
		return v, nil
	case errors.Is(err, ErrTooDeep):
		return nil, err
	}
	return trimmed, nil
}
