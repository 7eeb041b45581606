//go:build notemporal

package main

import (
	"context"
	"errors"

	"github.com/spf13/cobra"

	"github.com/ensemble-run/ensemble/batch"
	"github.com/ensemble-run/ensemble/engine"
	"github.com/ensemble-run/ensemble/ensemble"
)

// A build without the Temporal engine (-tags notemporal), which `make test`
// uses to spare compiling the Temporal SDK: the commands and flags exist
// and say so. temporal.go is the engine's wiring.

var errNoTemporal = &exitError{code: engine.ExitUsage,
	err: errors.New("this build of ensemble has no Temporal engine (it was built with -tags notemporal)")}

func newWorkerCmd(*stdio) *cobra.Command {
	return &cobra.Command{Use: "worker", Short: "Run ensembles for a Temporal cluster (not in this build)",
		RunE: func(*cobra.Command, []string) error { return errNoTemporal }}
}

func newAnswerCmd(*stdio) *cobra.Command {
	return &cobra.Command{Use: "answer RUN_ID AGENT TEXT", Short: "Answer a run on Temporal (not in this build)",
		RunE: func(*cobra.Command, []string) error { return errNoTemporal }}
}

func runTemporal(context.Context, *stdio, *ensemble.Ensemble, string, string, *runFlags) error {
	return errNoTemporal
}

func temporalBatch(context.Context, *stdio, *ensemble.Ensemble, string, *batchFlags, *batch.Batch) error {
	return errNoTemporal
}

func showTemporal(context.Context, *stdio, *temporalFlags, string, string) error {
	return errNoTemporal
}
