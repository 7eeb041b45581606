//go:build notemporal

package main

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/ensemble-run/ensemble/durable"
	"github.com/ensemble-run/ensemble/engine"
	"github.com/ensemble-run/ensemble/serve"
)

// A build without the Temporal engine (-tags notemporal), which `make test`
// uses to spare compiling the Temporal SDK: the commands and flags exist
// and say so. temporal.go is the engine's wiring.

var errNoTemporal = &exitError{code: engine.ExitUsage, err: durable.ErrNoTemporal}

func newWorkerCmd(io *stdio) *cobra.Command {
	var t temporalFlags
	cmd := &cobra.Command{Use: "worker", Short: "Run ensembles for a Temporal cluster (not in this build)", Args: io.noArgs(),
		RunE: func(*cobra.Command, []string) error { return errNoTemporal }}
	t.register(cmd, "the frontend of the Temporal cluster to work for, `HOST:PORT`", false)
	return cmd
}

func newAnswerCmd(io *stdio) *cobra.Command {
	var t temporalFlags
	cmd := &cobra.Command{Use: "answer RUN_ID AGENT TEXT", Short: "Answer a run on Temporal (not in this build)",
		Args: io.args(3, 3, "a RUN_ID, an AGENT and the answer TEXT"),
		RunE: func(*cobra.Command, []string) error { return errNoTemporal }}
	t.register(cmd, "the frontend of the Temporal cluster the run is on, `HOST:PORT`", false)
	return cmd
}

func showTemporal(context.Context, *stdio, *temporalFlags, string, string) error {
	return errNoTemporal
}

func serveEngine(*temporalFlags) (serve.Engine, func(), error) {
	return nil, nil, &exitError{code: engine.ExitUsage, err: fmt.Errorf("--temporal: %w", errNoTemporal.err)}
}
