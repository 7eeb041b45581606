// Package runners is what the built-in kinds' runners share beyond the
// public packages agentpath and scriptexec: the parsing of outputs and
// replies, the check of an output against the agent's output_schema, and
// the text an execution is given (Given, Labelled).
package runners

import (
	"errors"
	"strings"
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
