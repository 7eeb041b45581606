package engine

import (
	"context"
	"errors"
	"strconv"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/ensemble-run/ensemble/agent"
	"github.com/ensemble-run/ensemble/internal/tracing"
	"github.com/ensemble-run/ensemble/state"
)

// The run's spans (docs/tracing.md): a span for the run, one per turn under
// it and one per execution under its turn; the kinds add theirs (model
// requests, tool calls, a child ensemble's run) under the execution's,
// under the span the context carries. With no tracer (Options.Tracer nil)
// r.tr is nil and nothing here is called.

// startTrace opens the run's span, under the span of ctx (the execution
// that runs a child ensemble), once.
func (r *Run) startTrace(ctx context.Context) {
	if r.tr == nil {
		return
	}
	attrs := []attribute.KeyValue{tracing.Ensemble.String(r.ens.Name)}
	if r.opts.RunID != "" {
		attrs = append(attrs, tracing.RunID.String(r.opts.RunID), tracing.ConversationID.String(r.opts.RunID))
	}
	if r.st.TurnCount > 0 {
		attrs = append(attrs, attribute.Int("ensemble.resumed_after_turn", r.st.TurnCount))
	}
	if r.tr.Content {
		attrs = append(attrs, tracing.Input.String(r.tr.Redact(r.st.Input)))
	}
	_, r.span = r.tr.Start(ctx, "run "+r.ens.Name, trace.WithAttributes(attrs...))
}

// endTrace closes the run's span with the result.
func (r *Run) endTrace(res *Result) {
	if r.span == nil {
		return
	}
	span := r.span
	r.span = nil
	span.SetAttributes(
		tracing.CompletionReason.String(res.CompletionReason),
		tracing.TurnCount.Int(res.TurnCount),
		tracing.InputTokens.Int(res.Usage.InputTokens),
		tracing.OutputTokens.Int(res.Usage.OutputTokens),
		tracing.Requests.Int(res.Usage.Requests),
	)
	if res.Usage.Cost > 0 {
		span.SetAttributes(tracing.Cost.Float64(res.Usage.Cost))
	}
	if code := res.ExitCode(); code != ExitOK && code != ExitAwaitingInput {
		msg := res.CompletionReason
		if res.CompletionReason == Completed {
			msg = "an agent failed"
		}
		tracing.Fail(span, msg)
	}
	span.End()
}

// startTurn opens a turn's span under the run's and returns ctx carrying
// it, for the turn's executions.
func (r *Run) startTurn(ctx context.Context, turn int, agents []string) (context.Context, trace.Span) {
	ctx = trace.ContextWithSpan(ctx, r.span)
	ctx, span := r.tr.Start(ctx, "turn "+strconv.Itoa(turn), trace.WithAttributes(
		tracing.Ensemble.String(r.ens.Name),
		tracing.Turn.Int(turn),
		tracing.Agents.StringSlice(agents),
	))
	return ctx, span
}

// startExecution opens an execution's span under its turn's.
func (r *Run) startExecution(ctx context.Context, req *agent.Request) (context.Context, trace.Span) {
	a := req.Agent
	attrs := []attribute.KeyValue{
		tracing.OperationName.String(tracing.OpInvokeAgent),
		tracing.AgentName.String(a.Name),
		tracing.Ensemble.String(r.ens.Name),
		tracing.Agent.String(a.Name),
		tracing.Turn.Int(req.Turn),
		tracing.Execution.Int(req.Execution),
	}
	if a.Kind != nil {
		attrs = append(attrs, tracing.Kind.String(a.Kind.String()))
	}
	if req.Path != "" {
		attrs = append(attrs, tracing.AgentPath.String(req.Path))
	}
	if in := req.Instance; in != nil {
		attrs = append(attrs, tracing.Instance.Int(in.Index), tracing.InstanceCount.Int(in.Count))
	}
	if r.opts.RunID != "" {
		attrs = append(attrs, tracing.RunID.String(r.opts.RunID))
	}
	return r.tr.Start(ctx, tracing.OpInvokeAgent+" "+eventName(req), trace.WithAttributes(attrs...))
}

// endExecution closes an execution's span with what it returned (already
// redacted).
func (r *Run) endExecution(span trace.Span, res *agent.Result) {
	if res.StopReason != "" {
		span.SetAttributes(tracing.StopReason.String(res.StopReason))
	}
	if u := res.Usage; u != nil && *u != (state.Usage{}) {
		span.SetAttributes(tracing.InputTokens.Int(u.InputTokens), tracing.OutputTokens.Int(u.OutputTokens),
			tracing.Requests.Int(u.Requests))
	}
	if r.tr.Content && res.Err == nil {
		span.SetAttributes(tracing.Output.String(r.tr.JSON(res.Output)))
	}
	if errors.Is(res.Err, agent.ErrAwaitingInput) {
		// Not a failure: the run waits (docs/semantics.md#ask-agents-that-wait).
		span.SetAttributes(attribute.Bool("ensemble.awaiting_input", true))
		span.End()
		return
	}
	tracing.End(span, res.Err)
}

// traceRetry records a failed attempt that is tried again as an event of
// the execution's span.
func (r *Run) traceRetry(ctx context.Context, attempt int, err error) {
	trace.SpanFromContext(ctx).AddEvent("retry", trace.WithAttributes(
		attribute.Int("ensemble.attempt", attempt),
		attribute.String("exception.message", r.opts.Secrets.Error(err).Error()),
	))
}

// traceFailedPlan makes the span of an execution that failed when it was
// planned (it never ran).
func (r *Run) traceFailedPlan(ctx context.Context, x *execution) {
	_, span := r.startExecution(ctx, x.req)
	tracing.End(span, r.opts.Secrets.Error(x.failed))
}
