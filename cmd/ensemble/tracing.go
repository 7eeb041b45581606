package main

import (
	"context"
	"fmt"

	"go.opentelemetry.io/otel/trace"

	"github.com/ensemble-run/ensemble/internal/telemetry"
)

// cmdTracing is the OpenTelemetry SDK of one command (docs/tracing.md); nil
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
		fmt.Fprintf(c.io.stderr(), "ensemble: warning: traces were not all exported to %s: %v\n", c.t.Endpoint, err)
	}
}
