// Package runners is what the kinds' runners share (the kinds themselves
// are the packages under kinds/): injected responses and the runner that
// serves them before the kinds' (docs/testing.md#the-responses-file), the
// parsing of outputs and replies, the input an agent is given, starting a
// script or tool process, and the barrier of a durable run whose turns are
// saved behind it.
package runners

import (
	"errors"
	"strings"

	"github.com/ensemble-run/ensemble/internal/proc"
)

// How a script or tool process fails (package internal/proc starts them).
type (
	ExitError        = proc.ExitError
	TimeoutError     = proc.TimeoutError
	CancelledError   = proc.CancelledError
	OutputLimitError = proc.OutputLimitError
	InterpreterError = proc.InterpreterError
)

// Limits of a script or tool process.
const (
	// DefaultMaxOutput is the stdout limit of a script or tool (docs/semantics.md#script-agents).
	DefaultMaxOutput = proc.DefaultMaxOutput
	// StderrTail is how much of the end of stderr is kept.
	StderrTail = proc.StderrTail
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

// DecodeOutput decodes the JSON value b as an output: valid JSON that nests
// deeper than MaxOutputDepth is ErrTooDeep; invalid JSON is
// json.Unmarshal's error.
func DecodeOutput(b []byte) (any, error) { return decodeOutput(b) }
