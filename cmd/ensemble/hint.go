package main

import (
	"errors"
	"strings"

	"github.com/ensemble-run/ensemble/durable"
	"github.com/ensemble-run/ensemble/engine"
	"github.com/ensemble-run/ensemble/internal/mcptools"
	"github.com/ensemble-run/ensemble/session"
)

// hint is the hint of a durable error (durable.Hint), its commands named
// with this program, as the user typed it.
func (s *stdio) hint(err error) string {
	return strings.ReplaceAll(durable.Hint(err), "\n  ", "\n  "+s.program()+" ")
}

// startError is the error of a run that did not start (durable.Creation
// and Resumption's Start), for the command line: Ctrl-C while an MCP
// server started ends it as an interrupted run, the run's timeout passing
// meanwhile as a timeout, a session that did not open (a tool the agents
// lack) is a usage error, as is a run the Temporal cluster does not play
// (temporalError), and a state file's refusal is stateError's.
func (s *stdio) startError(path string, err error, flag bool) error {
	if te := temporalError(err); te != nil {
		return te
	}
	var interrupted *session.InterruptedError
	switch {
	case errors.As(err, &interrupted):
		return &exitError{code: engine.ExitCancelled, err: err}
	case errors.As(err, new(*mcptools.TimeoutError)):
		return &exitError{code: engine.ExitTimeout, err: err}
	case errors.As(err, new(*durable.OpenError)):
		return &exitError{code: engine.ExitUsage, err: err}
	}
	return s.stateError(path, err, flag)
}
