package main

import (
	"errors"
	"fmt"

	"github.com/ensemble-run/ensemble/durable"
	"github.com/ensemble-run/ensemble/engine"
)

// temporalError is durable's refusal of a run on Temporal, for the
// command line: what the cluster does not play, named by its flags, and a
// build or a cluster without the engine; nil for any other error.
func temporalError(err error) error {
	var refused *durable.RefusedError
	var dial *durable.DialError
	switch {
	case errors.Is(err, durable.ErrNoTemporal):
		return &exitError{code: engine.ExitUsage, err: err}
	case errors.Is(err, durable.ErrTemporalSaved):
		return usageErr("--state and --temporal: %v", err)
	case errors.Is(err, durable.ErrTemporalRecorded):
		return usageErr("--record and --replay: %v; run it without --temporal", err)
	case errors.Is(err, durable.ErrTemporalStrict):
		return usageErr("--strict: %v; run it without --temporal, or read its warnings in the result", err)
	case errors.Is(err, durable.ErrTemporalBudget):
		return usageErr("--max-tokens, --max-requests and --max-cost: %v (each execution is an activity, not capped mid-turn); run it without --temporal to cap it", err)
	case errors.As(err, &refused):
		return usageErr("%v", refused.Err)
	case errors.As(err, &dial):
		return &exitError{code: engine.ExitUsage, err: fmt.Errorf("--temporal %s: %w", dial.Addr, dial.Err)}
	}
	return nil
}

// newError is the error of a run durable.New refused.
func (s *stdio) newError(path string, err error) error {
	if te := temporalError(err); te != nil {
		return te
	}
	return s.stateError(path, err, true)
}
