//go:build !notemporal

package temporalengine

import (
	"bytes"
	"context"
	"sync"

	"github.com/ensemble-run/ensemble/events"
	"github.com/ensemble-run/ensemble/session"
)

// RunLocal runs in with the local engine, in this process, in the session a
// worker of env would use: what the workflow's result must equal, but for
// times and durations.
func RunLocal(ctx context.Context, env *Env, in RunInput, sink events.Sink) (*RunOutput, error) {
	f, err := env.load(in.Path, in.SHA256, in.Profiles)
	if err != nil {
		return nil, err
	}
	opts, err := env.options(&ExecInput{Responses: in.Responses, Live: in.Live, LiveAll: in.LiveAll, Batch: in.Batch})
	if err != nil {
		return nil, err
	}
	opts.Limits = session.Limits{MaxTurns: in.MaxTurns, Timeout: in.Timeout, Parallel: in.Parallel}
	s, err := session.Open(ctx, f.e, opts)
	if err != nil {
		return nil, err
	}
	defer s.Close()
	var log []events.Event
	var mu sync.Mutex
	if sink == nil {
		sink = func(ev events.Event) { mu.Lock(); log = append(log, ev); mu.Unlock() }
	}
	r, err := s.Start(in.Input, session.RunOptions{Events: sink})
	if err != nil {
		return nil, err
	}
	res, err := r.Run(ctx)
	if err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	if err := res.WriteJSON(&buf); err != nil {
		return nil, err
	}
	return &RunOutput{Result: buf.Bytes(), ExitCode: res.ExitCode(), Events: log}, nil
}
