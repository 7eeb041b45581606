//go:build !notemporal

package temporalengine

import (
	"context"

	"go.temporal.io/sdk/client"

	"github.com/ensemble-run/ensemble/durable"
	"github.com/ensemble-run/ensemble/engine"
	"github.com/ensemble-run/ensemble/events"
)

// A program that imports this package plays runs on Temporal through
// durable (NewOptions.Temporal, and the commands' batches): the engine
// registers itself there.
func init() { durable.RegisterTemporal(openPlayer) }

// player plays the runs of one RunInput on a cluster.
type player struct {
	c     client.Client
	queue string
	base  RunInput
}

// openPlayer checks spec (InputFor: a *durable.RefusedError), then dials
// the cluster t names (a *durable.DialError).
func openPlayer(spec durable.RemoteSpec, t durable.Temporal) (durable.Player, error) {
	e := spec.Ensemble
	in, err := InputFor(e, RunInput{Path: e.Path, Responses: spec.Refs.Responses, Profiles: spec.Refs.Profiles,
		MaxTurns: spec.Limits.MaxTurns, Timeout: spec.Limits.Timeout, Parallel: spec.Limits.Parallel,
		Live: spec.Live, LiveAll: spec.LiveAll, Batch: spec.Batch})
	if err != nil {
		return nil, &durable.RefusedError{Err: err}
	}
	ns := t.Namespace
	if ns == "" {
		ns = DefaultNamespace
	}
	c, err := Dial(t.Addr, ns, t.Blobs)
	if err != nil {
		return nil, &durable.DialError{Addr: t.Addr, Err: err}
	}
	return &player{c: c, queue: t.TaskQueue, base: in}, nil
}

// Play is Run of the player's input with input: its result, its JSON and
// exit code as the workflow returned them.
func (p *player) Play(ctx context.Context, id, input string, sink events.Sink) (*engine.Result, []byte, int, error) {
	in := p.base
	in.Input = input
	res, out, err := Run(ctx, p.c, p.queue, id, in, sink)
	if err != nil {
		return nil, nil, 0, err
	}
	return res, out.Result, out.ExitCode, nil
}

func (p *player) Close() error {
	p.c.Close()
	return nil
}
