package engine_test

import (
	"context"
	"errors"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	agentpkg "github.com/ensemble-run/ensemble/agent"
	"github.com/ensemble-run/ensemble/engine"
	"github.com/ensemble-run/ensemble/internal/secrets"
)

// A run driven turn by turn (Step) traces as one driven whole: a run span
// that ends with Result, a turn span per turn under it, an execution span
// under its turn, which the execution's context carries, with the run's
// tracer lent to the kinds (Request.Services.Tracer); the error of a failed
// execution is redacted. (The command's tests check the
// same over OTLP: cmd/ensemble/tracing_test.go.)
func TestStepDrivenTrace(t *testing.T) {
	t.Parallel()
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	e := build(agent("a", 1), agent("b", 1, "a"))
	sawTracer := false
	run := agentpkg.RunnerFunc(func(ctx context.Context, req *agentpkg.Request) *agentpkg.Result {
		if req.Agent.Name == "a" {
			sawTracer = req.Services.Tracer != nil && trace.SpanFromContext(ctx).SpanContext().IsValid()
			return &agentpkg.Result{Output: "ok"}
		}
		return &agentpkg.Result{Err: errors.New("failed with sk-step-secret-123")}
	})
	r := engine.New(e, "", engine.Options{Runner: run, Tracer: tp.Tracer("test"), RunID: "r1",
		Secrets: secrets.New("sk-step-secret-123")})
	reason := ""
	for reason == "" {
		reason = r.Step(context.Background())
		if len(rec.Ended()) > 0 && rec.Ended()[len(rec.Ended())-1].Name() == "run test" {
			t.Fatal("the run span ended before Result")
		}
	}
	r.Result(reason)
	spans := rec.Ended()
	byName := map[string]sdktrace.ReadOnlySpan{}
	for _, s := range spans {
		byName[s.Name()] = s
	}
	runSpan := byName["run test"]
	if len(spans) != 5 || runSpan == nil || !sawTracer {
		t.Fatalf("%d spans %v, tracer in the execution's context: %v", len(spans), byName, sawTracer)
	}
	for child, parent := range map[string]string{"turn 1": "run test", "turn 2": "run test", "invoke_agent a": "turn 1", "invoke_agent b": "turn 2"} {
		if byName[child].Parent().SpanID() != byName[parent].SpanContext().SpanID() {
			t.Errorf("%s is not under %s", child, parent)
		}
	}
	if st := byName["invoke_agent b"].Status(); st.Description != "failed with [REDACTED]" {
		t.Errorf("status %+v", st)
	}
	if st := runSpan.Status(); st.Description != "an agent failed" {
		t.Errorf("run status %+v", st)
	}
	attrs := map[string]any{}
	for _, kv := range runSpan.Attributes() {
		attrs[string(kv.Key)] = kv.Value.AsInterface()
	}
	if attrs["ensemble.run.id"] != "r1" || attrs["ensemble.turn_count"] != int64(2) {
		t.Errorf("run attributes %v", attrs)
	}
}

// Without a tracer nothing is traced: runners are lent none, and their
// context carries no span.
func TestNoTracer(t *testing.T) {
	t.Parallel()
	e := build(agent("a", 1))
	found := true
	res := engine.New(e, "", engine.Options{Runner: agentpkg.RunnerFunc(func(ctx context.Context, req *agentpkg.Request) *agentpkg.Result {
		found = req.Services.Tracer != nil || trace.SpanFromContext(ctx).SpanContext().IsValid()
		return &agentpkg.Result{Output: "ok"}
	})}).Run(context.Background())
	if found || res.CompletionReason != engine.Completed {
		t.Fatalf("tracer in context %v, %s", found, res.CompletionReason)
	}
}
