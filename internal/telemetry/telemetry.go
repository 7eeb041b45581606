// Package telemetry sets up the OpenTelemetry SDK that exports a run's
// spans over OTLP/HTTP (docs/tracing.md). It is the only package that
// imports the SDK: the engine and the kinds make their spans through the
// API, with the tracer this package gives the command. When tracing is off,
// Setup returns nil and nothing of the SDK is started.
package telemetry

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"sync"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
)

// The environment variables read here; the client (otlp.go), the sampler
// and the resource read the other standard OTEL_* variables themselves
// (headers, timeout, compression, certificates, OTEL_SERVICE_NAME,
// OTEL_RESOURCE_ATTRIBUTES, OTEL_TRACES_SAMPLER, OTEL_BSP_*).
const (
	EnvEndpoint       = "OTEL_EXPORTER_OTLP_ENDPOINT"
	EnvTracesEndpoint = "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"
	EnvProtocol       = "OTEL_EXPORTER_OTLP_PROTOCOL"
	EnvTracesProtocol = "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL"
	EnvSDKDisabled    = "OTEL_SDK_DISABLED"
	EnvTracesExporter = "OTEL_TRACES_EXPORTER"
	EnvCaptureContent = "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"
)

// FlushTimeout bounds how long the spans not yet exported are waited for
// when the command ends (a collector that is down must not hold it).
const FlushTimeout = 5 * time.Second

// tracesPath is what OTLP/HTTP appends to a base endpoint.
const tracesPath = "/v1/traces"

// Config is what turns tracing on.
type Config struct {
	// Endpoint is --otel: the collector's OTLP/HTTP URL; "" leaves it to
	// the environment.
	Endpoint string
	// LookupEnv reads the environment; nil means no variable is set.
	LookupEnv func(string) (string, bool)
	// Version is the program's version (service.version).
	Version string
}

// Tracing is the SDK set up for one command.
type Tracing struct {
	tp *sdktrace.TracerProvider

	mu       sync.Mutex
	failures int   // exports that failed while the command ran
	first    error // the first of them
	// Content is OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true:
	// prompts, replies, tool arguments and results, inputs and outputs are
	// recorded in the spans (redacted of every key).
	Content bool
	// Endpoint is where the spans go.
	Endpoint string
}

// Setup starts the SDK when --otel or an OTLP endpoint variable is set and
// returns nil, nil otherwise (and when OTEL_SDK_DISABLED=true or
// OTEL_TRACES_EXPORTER=none). A configuration it cannot honour (the gRPC
// protocol, another exporter, a malformed URL) is an error.
func Setup(ctx context.Context, cfg Config) (*Tracing, error) {
	env := func(k string) string {
		if cfg.LookupEnv == nil {
			return ""
		}
		v, _ := cfg.LookupEnv(k)
		return strings.TrimSpace(v)
	}
	endpoint, err := endpointOf(cfg.Endpoint, env(EnvTracesEndpoint), env(EnvEndpoint))
	if err != nil || endpoint == "" {
		return nil, err
	}
	if strings.EqualFold(env(EnvSDKDisabled), "true") {
		return nil, nil
	}
	switch exp := strings.ToLower(env(EnvTracesExporter)); exp {
	case "none":
		return nil, nil
	case "", "otlp":
	default:
		return nil, fmt.Errorf("%s=%s: only otlp (or none) is supported", EnvTracesExporter, exp)
	}
	protocol := env(EnvTracesProtocol)
	if protocol == "" {
		protocol = env(EnvProtocol)
	}
	switch strings.ToLower(protocol) {
	case "", "http/protobuf":
	case "http/json":
		// The exporter of the OpenTelemetry release we build with (the
		// newest that the Temporal server's tests build with too) speaks
		// protobuf only.
		return nil, errors.New("traces are exported as OTLP/HTTP protobuf: unset " + EnvProtocol +
			" (or set it to http/protobuf); every collector that takes http/json takes http/protobuf too")
	case "grpc":
		return nil, errors.New("traces are exported over OTLP/HTTP only, not gRPC: unset " + EnvProtocol +
			" (or set it to http/protobuf) and give the collector's OTLP/HTTP endpoint (port 4318 by default)")
	default:
		return nil, fmt.Errorf("%s=%s: want http/protobuf", EnvProtocol, protocol)
	}
	c, err := newClient(endpoint)
	if err != nil {
		return nil, err
	}
	exp, err := otlptrace.New(ctx, c)
	if err != nil {
		return nil, fmt.Errorf("the OTLP exporter: %w", err)
	}
	// The program's own name and version first: OTEL_SERVICE_NAME and
	// OTEL_RESOURCE_ATTRIBUTES override them.
	res, err := resource.New(ctx,
		resource.WithAttributes(attribute.String("service.name", "ensemble"), attribute.String("service.version", cfg.Version)),
		resource.WithFromEnv(),
		resource.WithTelemetrySDK(),
	)
	if err != nil && res == nil {
		return nil, fmt.Errorf("the trace resource: %w", err)
	}
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp), sdktrace.WithResource(res))
	t := &Tracing{tp: tp, Content: strings.EqualFold(env(EnvCaptureContent), "true"), Endpoint: endpoint}
	catchErrors(t)
	return t, nil
}

// The SDK reports a failed export in the background to the process's one
// error handler, which by default logs it on stderr at once, over the
// progress display and once per batch. Here the failures are counted by
// every Tracing set up and not yet shut down (one, but in tests), and
// Shutdown reports them once.
var (
	handlerOnce sync.Once
	activeMu    sync.Mutex
	active      = map[*Tracing]bool{}
)

func catchErrors(t *Tracing) {
	handlerOnce.Do(func() {
		otel.SetErrorHandler(otel.ErrorHandlerFunc(func(err error) {
			activeMu.Lock()
			defer activeMu.Unlock()
			for t := range active {
				t.mu.Lock()
				if t.failures == 0 {
					t.first = err
				}
				t.failures++
				t.mu.Unlock()
			}
		}))
	})
	activeMu.Lock()
	active[t] = true
	activeMu.Unlock()
}

// endpointOf is the URL spans are posted to: --otel, else the traces
// endpoint as it is, else the base endpoint. --otel and the base endpoint
// get /v1/traces unless their path already ends with it.
func endpointOf(flag, traces, base string) (string, error) {
	what, u, appendPath := "--otel", flag, true
	switch {
	case flag != "":
	case traces != "":
		what, u, appendPath = EnvTracesEndpoint, traces, false
	case base != "":
		what, u = EnvEndpoint, base
	default:
		return "", nil
	}
	p, err := url.Parse(u)
	if err != nil || (p.Scheme != "http" && p.Scheme != "https") || p.Host == "" {
		return "", fmt.Errorf("%s: want an http:// or https:// URL such as http://localhost:4318, got %q", what, u)
	}
	if appendPath && !strings.HasSuffix(p.Path, tracesPath) {
		p.Path = strings.TrimRight(p.Path, "/") + tracesPath
	}
	return p.String(), nil
}

// Tracer is the tracer the engine is given.
func (t *Tracing) Tracer() trace.Tracer {
	return t.tp.Tracer("github.com/ensemble-run/ensemble")
}

// Shutdown exports the spans still buffered and stops the SDK, waiting at
// most FlushTimeout whatever ctx says (it runs after Ctrl-C too).
func (t *Tracing) Shutdown() error {
	if t == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), FlushTimeout)
	defer cancel()
	err := t.tp.Shutdown(ctx)
	activeMu.Lock()
	delete(active, t)
	activeMu.Unlock()
	t.mu.Lock()
	defer t.mu.Unlock()
	switch {
	case err != nil && t.failures > 0:
		return fmt.Errorf("%w (and %d export(s) failed before: %v)", err, t.failures, t.first)
	case t.failures > 0:
		return fmt.Errorf("%d export(s) failed: %w", t.failures, t.first)
	}
	return err
}
