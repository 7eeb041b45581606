package main

import (
	"context"
	"fmt"

	"go.opentelemetry.io/otel/trace"

	"github.com/ensemble-run/ensemble/internal/telemetry"
	"github.com/ensemble-run/ensemble/session"
)

// export is what --otel asks of a run's session: its spans exported to
// the collector the flag or the environment names, and a warning when
// they could not all be (session.Export).
func (s *sharedFlags) export(io *stdio) *session.Export {
	return &session.Export{Endpoint: s.otel, Version: version(), Warn: func(endpoint string, err error) {
		warnUnexported(io, endpoint, err)
	}}
}

// warnUnexported warns that spans could not all be exported: the run's
// own outcome stands.
func warnUnexported(io *stdio, endpoint string, err error) {
	fmt.Fprintf(io.stderr(), "ensemble: warning: traces were not all exported to %s: %v\n", endpoint, err)
}

// cmdTracing is the OpenTelemetry SDK of `test` (docs/tracing.md), whose
// scenarios are not run through one session (run and resume have theirs
// set up by their session: export); nil
// when tracing is off, which every method accepts.
type cmdTracing struct {
	io *stdio
	t  *telemetry.Tracing
}

// startTracing sets up tracing when --otel (flag) or an OTLP endpoint
// variable is set; a configuration it cannot honour is a usage error.
func startTracing(ctx context.Context, io *stdio, flag string) (*cmdTracing, error) {
	t, err := telemetry.Setup(ctx, telemetry.Config{Endpoint: flag, LookupEnv: io.lookupEnv, Version: version()})
	if err != nil {
		return nil, usageErr("tracing: %v", err)
	}
	if t == nil {
		return nil, nil
	}
	return &cmdTracing{io: io, t: t}, nil
}

// tracer is the tracer of the command's runs and whether it records
// their content; nil when tracing is off.
func (c *cmdTracing) tracer() (trace.Tracer, bool) {
	if c == nil {
		return nil, false
	}
	return c.t.Tracer(), c.t.Content
}

// stop exports what is left, waiting a bounded time, and warns when the
// collector could not be reached: the run's own outcome stands.
func (c *cmdTracing) stop() {
	if c == nil {
		return
	}
	if err := c.t.Shutdown(); err != nil {
		warnUnexported(c.io, c.t.Endpoint, err)
	}
}
