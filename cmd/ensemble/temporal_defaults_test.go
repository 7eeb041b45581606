//go:build !notemporal

package main

import (
	"testing"

	"github.com/ensemble-run/ensemble/temporalengine"
)

// The --namespace and --task-queue defaults are the Temporal engine's own
// (temporalflags.go keeps copies, since the notemporal build has no engine).
func TestTemporalFlagDefaultsAreTheEngines(t *testing.T) {
	t.Parallel()
	if defaultNamespace != temporalengine.DefaultNamespace || defaultTaskQueue != temporalengine.DefaultTaskQueue {
		t.Fatalf("flags default to namespace %q and task queue %q, the engine to %q and %q",
			defaultNamespace, defaultTaskQueue, temporalengine.DefaultNamespace, temporalengine.DefaultTaskQueue)
	}
}
