//go:build !notemporal

package main

import (
	"context"

	"github.com/ensemble-run/ensemble/engine"
	"github.com/ensemble-run/ensemble/internal/batch"
)

// batchOnTemporal is the batch.RunOne of a batch whose inputs run on
// Temporal (temporalengine.BatchRunOne, which names no internal type).
func batchOnTemporal(run func(ctx context.Context, index int, input string) (*engine.Result, error)) batch.RunOne {
	return func(ctx context.Context, in *batch.Input) (*engine.Result, error) {
		return run(ctx, in.Index, in.Input)
	}
}
