package main

import (
	"github.com/spf13/cobra"

	"github.com/ensemble-run/ensemble/durable"
)

// The flags of the Temporal engine, in every build: a build without it
// (-tags notemporal, see temporal_off.go) takes them and says it has no
// engine for them.

// The defaults of temporalengine.DefaultNamespace and DefaultTaskQueue
// (TestTemporalFlagDefaultsAreTheEngines, in the default build, checks
// that they are the same).
const (
	defaultNamespace = "default"
	defaultTaskQueue = "ensemble"
)

// temporalFlags say which Temporal cluster, namespace and task queue.
type temporalFlags struct {
	addr, namespace, queue string
	blobs                  string // --blobs: where large payloads go by reference
}

// register adds the flags to cmd; what is the usage of --temporal, worded
// for the command (it names its value `HOST:PORT`).
func (t *temporalFlags) register(cmd *cobra.Command, what string, required bool) {
	fl := cmd.Flags()
	fl.StringVar(&t.addr, "temporal", "", what)
	fl.StringVar(&t.namespace, "namespace", defaultNamespace, "with --temporal, the Temporal `NAMESPACE`")
	fl.StringVar(&t.queue, "task-queue", defaultTaskQueue, "with --temporal, the task `QUEUE` the workers poll")
	fl.StringVar(&t.blobs, "blobs", "", "with --temporal, send payloads over 512 KiB by reference through files in `DIR`, which every worker and client shares")
	if required {
		_ = cmd.MarkFlagRequired("temporal")
	}
}

// options are the cluster the flags name (none without --temporal).
func (t *temporalFlags) options() durable.Temporal {
	return durable.Temporal{Addr: t.addr, Namespace: t.namespace, TaskQueue: t.queue, Blobs: t.blobs}
}
