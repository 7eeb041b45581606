// Package tracing is what the engine and the kinds share to make
// OpenTelemetry spans (docs/tracing.md): the tracer of a run, which the run
// lends its executions (agent.Services.Tracer), and the names of the
// attributes. It uses only
// the OpenTelemetry API: the SDK, its exporter and its configuration live in
// package telemetry, which only the command wires. When tracing is off there
// is no Tracer anywhere and every caller stops at a nil check.
package tracing

import (
	"encoding/json"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/ensemble-run/ensemble/internal/secrets"
)

// Tracer is a run's tracer and how much it records.
type Tracer struct {
	trace.Tracer
	// Content records prompts, replies, tool arguments and results, and
	// outputs (OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true),
	// always redacted by Secrets first.
	Content bool
	// Secrets are redacted from whatever content is recorded.
	Secrets *secrets.Redactor
}

// Redact is s without any key, for a content attribute.
func (t *Tracer) Redact(s string) string { return t.Secrets.String(s) }

// JSON is v encoded as JSON and redacted, for a content attribute.
func (t *Tracer) JSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return ""
	}
	return t.Secrets.String(string(b))
}

// End ends span with an error status when err is not nil.
func End(span trace.Span, err error) {
	if err != nil {
		Fail(span, err.Error())
	}
	span.End()
}

// Fail sets span's status to error with msg.
func Fail(span trace.Span, msg string) {
	span.SetStatus(codes.Error, msg)
}

// Attribute keys. The gen_ai.* ones are OpenTelemetry's semantic
// conventions for generative AI; the ensemble.* ones are the run's own.
const (
	OperationName  = attribute.Key("gen_ai.operation.name")
	ProviderName   = attribute.Key("gen_ai.provider.name")
	System         = attribute.Key("gen_ai.system")
	RequestModel   = attribute.Key("gen_ai.request.model")
	MaxTokens      = attribute.Key("gen_ai.request.max_tokens")
	Temperature    = attribute.Key("gen_ai.request.temperature")
	InputTokens    = attribute.Key("gen_ai.usage.input_tokens")
	OutputTokens   = attribute.Key("gen_ai.usage.output_tokens")
	FinishReasons  = attribute.Key("gen_ai.response.finish_reasons")
	AgentName      = attribute.Key("gen_ai.agent.name")
	ConversationID = attribute.Key("gen_ai.conversation.id")
	ToolName       = attribute.Key("gen_ai.tool.name")
	ToolCallID     = attribute.Key("gen_ai.tool.call.id")
	ToolType       = attribute.Key("gen_ai.tool.type")
	ErrorType      = attribute.Key("error.type")
	ServerAddress  = attribute.Key("server.address")
	ServerPort     = attribute.Key("server.port")

	// Content, recorded only with Tracer.Content.
	SystemInstructions = attribute.Key("gen_ai.system_instructions")
	InputMessages      = attribute.Key("gen_ai.input.messages")
	OutputMessages     = attribute.Key("gen_ai.output.messages")
	ToolArguments      = attribute.Key("gen_ai.tool.call.arguments")
	ToolResult         = attribute.Key("gen_ai.tool.call.result")

	RunID            = attribute.Key("ensemble.run.id")
	Ensemble         = attribute.Key("ensemble.name")
	Agent            = attribute.Key("ensemble.agent")
	AgentPath        = attribute.Key("ensemble.agent.path")
	Kind             = attribute.Key("ensemble.agent.kind")
	Turn             = attribute.Key("ensemble.turn")
	Execution        = attribute.Key("ensemble.execution")
	Instance         = attribute.Key("ensemble.instance")
	InstanceCount    = attribute.Key("ensemble.instance.count")
	Agents           = attribute.Key("ensemble.turn.agents")
	CompletionReason = attribute.Key("ensemble.completion_reason")
	TurnCount        = attribute.Key("ensemble.turn_count")
	StopReason       = attribute.Key("ensemble.stop_reason")
	Requests         = attribute.Key("ensemble.usage.requests")
	Cost             = attribute.Key("ensemble.usage.cost")
	Profile          = attribute.Key("ensemble.model_profile")
	Input            = attribute.Key("ensemble.input")
	Output           = attribute.Key("ensemble.output")
)

// Operation names (gen_ai.operation.name).
const (
	OpChat        = "chat"
	OpExecuteTool = "execute_tool"
	OpInvokeAgent = "invoke_agent"
)
