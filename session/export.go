package session

import (
	"context"
	"fmt"
	"os"
	"sync"

	"go.opentelemetry.io/otel/trace"

	"github.com/ensemble-run/ensemble/internal/telemetry"
)

// Export has a session export its runs' spans itself, over OTLP/HTTP
// (docs/tracing.md): Open sets the OpenTelemetry SDK up, and Close
// exports what is left and stops it. It is what `ensemble run` and
// `resume` do with --otel.
type Export struct {
	// Endpoint is the collector's OTLP/HTTP URL (/v1/traces is added
	// unless it ends with it); "" leaves it to the environment, read
	// through Options.LookupEnv (OTEL_EXPORTER_OTLP_ENDPOINT and the
	// other OTEL_* variables): when it names none, nothing is exported.
	Endpoint string
	// Version is the program's version, the spans' service.version.
	Version string
	// Warn, when set, is told as the session closes that spans could not
	// all be exported to endpoint (a collector that is down, or slow past
	// a few seconds): the runs' outcomes stand.
	Warn func(endpoint string, err error)
}

// exporting is a session's exporter, set up by startExport.
type exporting struct {
	t    *telemetry.Tracing
	warn func(endpoint string, err error)
	once sync.Once
}

// startExport sets up the exporter x asks for and makes its tracer the
// session's (the Tracer given, if any, stands); nil when nothing is to
// be exported. A configuration it cannot honour (the gRPC protocol,
// another exporter, a malformed URL) is an error, "tracing: …".
func (opts *Options) startExport(ctx context.Context, lookup func(string) (string, bool)) (*exporting, error) {
	x := opts.Tracing.Export
	if x == nil || opts.Tracing.Tracer != nil {
		return nil, nil
	}
	ex, err := x.start(ctx, lookup)
	if ex != nil {
		opts.Tracing.Tracer, opts.Tracing.Content = ex.t.Tracer(), ex.t.Content
	}
	return ex, err
}

func (x *Export) start(ctx context.Context, lookup func(string) (string, bool)) (*exporting, error) {
	t, err := telemetry.Setup(ctx, telemetry.Config{Endpoint: x.Endpoint, LookupEnv: lookup, Version: x.Version})
	if err != nil {
		return nil, fmt.Errorf("tracing: %w", err)
	}
	if t == nil {
		return nil, nil
	}
	return &exporting{t: t, warn: x.Warn}, nil
}

// Start sets up the exporter x asks for, for runs that no one session
// opens (the scenarios of `ensemble test`, each a session of its own):
// the tracer they take and whether it records their content, and stop,
// which exports what is left and tells Warn when some could not be. A nil
// tracer: nothing is exported (stop does nothing). A configuration it
// cannot honour is an error, "tracing: …", as Open's.
func (x *Export) Start(ctx context.Context, lookup func(string) (string, bool)) (tracer trace.Tracer, content bool, stop func(), err error) {
	if lookup == nil {
		lookup = os.LookupEnv
	}
	ex, err := x.start(ctx, lookup)
	if err != nil || ex == nil {
		return nil, false, func() {}, err
	}
	return ex.t.Tracer(), ex.t.Content, ex.stop, nil
}

// stop exports what is left, waiting a bounded time, and tells Warn
// when some of it could not be; once.
func (x *exporting) stop() {
	if x == nil {
		return
	}
	x.once.Do(func() {
		if err := x.t.Shutdown(); err != nil && x.warn != nil {
			x.warn(x.t.Endpoint, err)
		}
	})
}
