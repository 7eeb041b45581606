//go:build !notemporal

package temporalengine

import (
	"bytes"
	"context"
	"sync"

	"github.com/ensemble-run/ensemble/engine"
	"github.com/ensemble-run/ensemble/events"
)

// RunLocal runs in with the local engine, in this process, with the runner
// a worker of env would use: what the workflow's result must equal, but
// for times and durations.
func RunLocal(ctx context.Context, env *Env, in RunInput, sink events.Sink) (*RunOutput, error) {
	f, err := env.load(in.Path, in.SHA256, in.Profiles)
	if err != nil {
		return nil, err
	}
	run, err := env.runner(f, in.Responses, nil)
	if err != nil {
		return nil, err
	}
	var log []events.Event
	var mu sync.Mutex
	if sink == nil {
		sink = func(ev events.Event) { mu.Lock(); log = append(log, ev); mu.Unlock() }
	}
	r := engine.New(f.e, in.Input, engine.Options{Runner: run, MaxTurns: in.MaxTurns, Timeout: in.Timeout, Parallel: in.Parallel,
		Secrets: f.sec, Events: sink})
	res := r.Run(ctx)
	var buf bytes.Buffer
	if err := res.WriteJSON(&buf); err != nil {
		return nil, err
	}
	return &RunOutput{Result: buf.Bytes(), ExitCode: res.ExitCode(), Events: log}, nil
}
