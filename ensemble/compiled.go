package ensemble

import (
	"context"

	"github.com/ensemble-run/ensemble/internal/conditions"
	"github.com/ensemble-run/ensemble/internal/cron"
	"github.com/ensemble-run/ensemble/internal/opaque"
)

// The expressions of a file are compiled when it loads, and kept beside
// their source: an agent's when, a dependency's condition and select, a
// fan-out's over, a template, an expectation. Evaluating them is the
// engine's business, so their compiled forms are opaque outside this
// module: a program there can copy them with the types that hold them, and
// compare one with its zero value (none), nothing more.
type (
	// CompiledCondition is a compiled condition (when, condition).
	CompiledCondition opaque.Of[*conditions.Program]
	// CompiledSelect is a dependency's compiled select.
	CompiledSelect opaque.Of[*conditions.Select]
	// CompiledList is a fan-out's compiled over.
	CompiledList opaque.Of[*conditions.List]
	// CompiledTemplate is a compiled template.
	CompiledTemplate opaque.Of[*conditions.Template]
	// CompiledExpectation is a compiled expectation.
	CompiledExpectation opaque.Of[*conditions.Expectation]
)

// RequestTemplate renders a run's input from a webhook's request: its body
// (the parsed JSON, or the text) and its headers (lower-case names).
type RequestTemplate interface {
	EvalRequest(ctx context.Context, body any, headers map[string]any) (any, error)
}

// Schedule is a cron trigger's parsed schedule: Next is when it fires
// after a time, Latest the last time it fired in a span.
type Schedule = cron.Schedule

func (c CompiledCondition) get() *conditions.Program       { return opaque.Get(c) }
func (c CompiledSelect) get() *conditions.Select           { return opaque.Get(c) }
func (c CompiledExpectation) get() *conditions.Expectation { return opaque.Get(c) }
