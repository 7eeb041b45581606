package llm

import (
	"context"
	"encoding/json"
	"errors"
	"strconv"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/ensemble-run/ensemble/ensemble"
	"github.com/ensemble-run/ensemble/internal/tracing"
)

// Spans of model requests and tool calls (docs/tracing.md), made by the
// run's tracer (Request.Services.Tracer) under the span of the execution
// they belong to, which the engine puts in the context. Without a tracer
// they cost a nil check.

// startChat opens the span of one model request to profile p; nil span when
// tracing is off.
func startChat(ctx context.Context, tr *tracing.Tracer, p *ensemble.ModelProfile, req *ChatRequest, sec *secrets) (context.Context, trace.Span, *tracing.Tracer) {
	if tr == nil {
		return ctx, nil, nil
	}
	attrs := []attribute.KeyValue{
		tracing.OperationName.String(tracing.OpChat),
		tracing.ProviderName.String(p.Provider),
		tracing.System.String(p.Provider),
		tracing.RequestModel.String(p.Model),
		tracing.Profile.String(p.Name),
	}
	if p.MaxTokens > 0 {
		attrs = append(attrs, tracing.MaxTokens.Int(p.MaxTokens))
	}
	if p.Temperature != nil {
		attrs = append(attrs, tracing.Temperature.Float64(*p.Temperature))
	}
	if tr.Content {
		if req.System != "" {
			attrs = append(attrs, tracing.SystemInstructions.String(contentJSON(tr, sec, []part{{Type: "text", Content: req.System}})))
		}
		attrs = append(attrs, tracing.InputMessages.String(contentJSON(tr, sec, inputMessages(req.Messages))))
	}
	ctx, span := tr.Start(ctx, tracing.OpChat+" "+p.Model, trace.WithSpanKind(trace.SpanKindClient), trace.WithAttributes(attrs...))
	return ctx, span, tr
}

// endChat closes a model request's span with its reply or error.
func endChat(span trace.Span, tr *tracing.Tracer, resp *ChatResponse, err error, sec *secrets) {
	if err != nil {
		span.SetAttributes(tracing.ErrorType.String(errorType(err)))
		tracing.End(span, sec.redactError(err))
		return
	}
	reason := finishReason(resp.StopReason)
	span.SetAttributes(
		tracing.InputTokens.Int(resp.InputTokens),
		tracing.OutputTokens.Int(resp.OutputTokens),
		tracing.FinishReasons.StringSlice([]string{reason}),
	)
	if tr.Content {
		m := outputMessage{Role: string(RoleAssistant), FinishReason: reason, Parts: replyParts(resp)}
		span.SetAttributes(tracing.OutputMessages.String(contentJSON(tr, sec, []outputMessage{m})))
	}
	span.End()
}

// startTool opens the span of one tool call; nil span when tracing is off.
func startTool(ctx context.Context, tr *tracing.Tracer, c ToolCall) (context.Context, trace.Span, *tracing.Tracer) {
	if tr == nil {
		return ctx, nil, nil
	}
	attrs := []attribute.KeyValue{
		tracing.OperationName.String(tracing.OpExecuteTool),
		tracing.ToolName.String(c.Name),
		tracing.ToolCallID.String(c.ID),
		tracing.ToolType.String("function"),
	}
	ctx, span := tr.Start(ctx, tracing.OpExecuteTool+" "+c.Name, trace.WithSpanKind(trace.SpanKindInternal), trace.WithAttributes(attrs...))
	return ctx, span, tr
}

// endTool closes a tool call's span with its result message (redacted).
func endTool(span trace.Span, tr *tracing.Tracer, c ToolCall, m *Message, sec *secrets) {
	if tr.Content {
		span.SetAttributes(
			tracing.ToolArguments.String(tr.Redact(sec.redact(c.Arguments))),
			tracing.ToolResult.String(tr.Redact(m.Content)),
		)
	}
	if m.IsError {
		span.SetAttributes(tracing.ErrorType.String("tool_error"))
		tracing.Fail(span, tr.Redact(m.Content))
	}
	span.End()
}

// finishReason names a reply's stop reason as the conventions do.
func finishReason(stop string) string {
	switch stop {
	case replyEndTurn:
		return "stop"
	case replyToolUse:
		return "tool_call"
	case replyMaxTokens:
		return "length"
	case replyRefusal:
		return "content_filter"
	}
	return stop
}

// errorType is a short class of a failed request for error.type: the
// HTTP status, or what kept the request from getting one.
func errorType(err error) string {
	var pe *providerError
	switch {
	case !errors.As(err, &pe):
		return "_OTHER"
	case pe.status > 0:
		return strconv.Itoa(pe.status)
	case pe.unreachable:
		return "unreachable"
	}
	return "_OTHER"
}

// The message shapes of the conventions' gen_ai.input.messages and
// gen_ai.output.messages.
type (
	part struct {
		Type      string          `json:"type"`
		Content   string          `json:"content,omitempty"`
		ID        string          `json:"id,omitempty"`
		Name      string          `json:"name,omitempty"`
		Arguments json.RawMessage `json:"arguments,omitempty"`
		Response  string          `json:"response,omitempty"`
	}
	inputMessage struct {
		Role  string `json:"role"`
		Parts []part `json:"parts"`
	}
	outputMessage struct {
		Role         string `json:"role"`
		Parts        []part `json:"parts"`
		FinishReason string `json:"finish_reason"`
	}
)

func inputMessages(msgs []Message) []inputMessage {
	out := make([]inputMessage, len(msgs))
	for i, m := range msgs {
		im := inputMessage{Role: string(m.Role)}
		switch {
		case m.Role == RoleTool:
			im.Parts = []part{{Type: "tool_call_response", ID: m.ToolCallID, Response: m.Content}}
		default:
			if m.Content != "" {
				im.Parts = append(im.Parts, part{Type: "text", Content: m.Content})
			}
			for _, c := range m.ToolCalls {
				im.Parts = append(im.Parts, callPart(c))
			}
		}
		out[i] = im
	}
	return out
}

func replyParts(resp *ChatResponse) []part {
	var parts []part
	if resp.Text != "" {
		parts = append(parts, part{Type: "text", Content: resp.Text})
	}
	if resp.Refusal != "" && resp.Refusal != resp.Text {
		parts = append(parts, part{Type: "text", Content: resp.Refusal})
	}
	for _, c := range resp.ToolCalls {
		parts = append(parts, callPart(c))
	}
	return parts
}

// callPart is a tool call; its arguments as JSON when they are, else as a
// string.
func callPart(c ToolCall) part {
	args := json.RawMessage(c.Arguments)
	if !json.Valid(args) {
		args, _ = json.Marshal(c.Arguments)
	}
	return part{Type: "tool_call", ID: c.ID, Name: c.Name, Arguments: args}
}

// contentJSON is v as JSON with every key redacted.
func contentJSON(tr *tracing.Tracer, sec *secrets, v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return ""
	}
	return tr.Redact(sec.redact(string(b)))
}
