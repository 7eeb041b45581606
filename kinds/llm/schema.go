package llm

import (
	"errors"
	"fmt"
	"strings"

	"github.com/ensemble-run/ensemble/ensemble"
	"github.com/ensemble-run/ensemble/internal/responses"
	"github.com/ensemble-run/ensemble/internal/runners"
)

// DefaultOutputRepairs is output_repairs when absent: how many repair turns
// a reply that fails the agent's output_schema gets.
const DefaultOutputRepairs = 1

// decodeRepairs decodes output_repairs, which needs an output_schema, and
// checks that output_format does not contradict one (the schema implies
// json).
func decodeRepairs(f *ensemble.Fields, format string) int {
	if f.Has("output_format") && f.Has("output_schema") && format == "text" {
		f.Bad("output_format", "is text, but the agent has an output_schema, which implies json: remove output_format or write json")
	}
	if !f.Has("output_repairs") {
		return DefaultOutputRepairs
	}
	n, ok := f.Count("output_repairs")
	if ok && !f.Has("output_schema") {
		f.Bad("output_repairs", "needs an output_schema: repairs are for replies that fail it")
	}
	return n
}

// OutputRepairs is how many repair turns a's replies get when they fail its
// output_schema (also the injected responses it takes as repairs).
func (Kind) OutputRepairs(a *ensemble.Agent) int {
	if a.OutputSchema == nil {
		return 0
	}
	return SpecOf(a).OutputRepairs
}

// OutputSpec is an agent's output_schema as a request carries it to the
// provider's native structured output (docs/llm.md#output-schemas).
type OutputSpec struct {
	// Name names the schema (OpenAI's json_schema.name): the agent's name,
	// cut to 64 characters.
	Name   string
	Schema map[string]any // JSON values
	// Object is whether the schema's root is type: object, which OpenAI
	// and Anthropic require of native structured output; other schemas
	// reach only Ollama natively, and are checked on every reply anyway.
	Object bool
	// Strict is whether the schema fits OpenAI's strict mode: every object
	// lists all its properties as required and says additionalProperties:
	// false.
	Strict bool
}

// OutputToolName is the tool through which Anthropic models give an output
// with a schema: it is forced with tool_choice, and its input is the output.
const OutputToolName = "ensemble_output"

// outputSpec is what a request carries of a's output_schema; nil without one.
func outputSpec(a *ensemble.Agent) *OutputSpec {
	s := a.OutputSchema
	if s == nil {
		return nil
	}
	name := a.Name
	if len(name) > 64 {
		name = name[:64]
	}
	return &OutputSpec{Name: name, Schema: s.Doc, Object: s.IsObject(), Strict: strictSchema(s.Doc)}
}

// strictSchema reports whether schema fits OpenAI's strict structured
// output: every object schema in it (under properties, items, $defs,
// anyOf) has additionalProperties: false and requires all its properties.
func strictSchema(schema map[string]any) bool {
	if schema["type"] == "object" || schema["properties"] != nil {
		if schema["additionalProperties"] != false {
			return false
		}
		props, _ := schema["properties"].(map[string]any)
		required := map[string]bool{}
		list, _ := schema["required"].([]any)
		for _, r := range list {
			if name, ok := r.(string); ok {
				required[name] = true
			}
		}
		for name, p := range props {
			if !required[name] {
				return false
			}
			if m, ok := p.(map[string]any); ok && !strictSchema(m) {
				return false
			}
		}
	}
	if items, ok := schema["items"].(map[string]any); ok && !strictSchema(items) {
		return false
	}
	for _, key := range []string{"$defs", "definitions"} {
		defs, _ := schema[key].(map[string]any)
		for _, d := range defs {
			if m, ok := d.(map[string]any); ok && !strictSchema(m) {
				return false
			}
		}
	}
	for _, key := range []string{"anyOf", "allOf", "oneOf"} {
		list, _ := schema[key].([]any)
		for _, d := range list {
			if m, ok := d.(map[string]any); ok && !strictSchema(m) {
				return false
			}
		}
	}
	return true
}

// parseReply is the output of a final reply under the agent's
// output_format and output_schema, or why it is not one.
func (c *conversation) parseReply(text string) (any, error) {
	if c.outputFormat != "json" && c.schema == nil {
		return runners.ParseOutput(text)
	}
	// The same parser as injected responses (docs/llm.md#structured-output:
	// a fenced ```json block is accepted).
	v, err := runners.ParseJSONReply(text)
	switch {
	case err != nil && c.schema != nil:
		return nil, fmt.Errorf("output_schema needs JSON: %w", err)
	case err != nil:
		return nil, fmt.Errorf("output_format json: %w", err)
	}
	if err := runners.CheckSchema(c.agent, v); err != nil {
		return nil, err
	}
	return v, nil
}

// gaveUp is the error of a final reply that is not the output asked for:
// err, with the reply quoted and the repair turns it had.
func gaveUp(err error, reply string, repairs int) error {
	after := ""
	switch {
	case repairs == 1:
		after = " after 1 repair turn"
	case repairs > 1:
		after = fmt.Sprintf(" after %d repair turns", repairs)
	}
	return fmt.Errorf("%w; the reply%s was %s", err, after, responses.QuoteReply(reply))
}

// repairMessage is the user message of a repair turn: what was wrong with
// the reply (docs/llm.md#output-schemas).
func repairMessage(err error) string {
	var se *runners.SchemaError
	if errors.As(err, &se) {
		return "Your reply does not match the required JSON Schema: " + se.Problems +
			"\nReply again with only the corrected JSON."
	}
	return "Your reply is not the JSON the required JSON Schema asks for: " + strings.TrimPrefix(err.Error(), "output_schema needs JSON: ") +
		"\nReply again with only the JSON."
}

// responseFormat sets the native structured output of Chat Completions:
// response_format {type: json_schema, json_schema: {name, schema, strict}}.
// OpenAI requires an object at the root; Ollama's OpenAI-compatible
// endpoint takes any schema, which it hands to Ollama's own format.
func (p *openaiProvider) responseFormat(params *oaRequest, o *OutputSpec) {
	if o == nil || (!o.Object && p.name != ProviderOllama) {
		return
	}
	params.ResponseFormat = &oaResponseFormat{
		Type:       "json_schema",
		JSONSchema: oaJSONSchema{Name: o.Name, Schema: o.Schema, Strict: o.Strict},
	}
}

// outputTool sets Anthropic's tool-forced output: a tool whose input_schema
// is the output_schema, and tool_choice forcing it (tool_choice any when
// the agent has tools of its own, so that it may call them first). Its
// input is the output (see outputReply). Anthropic requires an object.
func outputTool(params *anRequest, o *OutputSpec, tools []ToolSpec) {
	if !usesOutputTool(o, tools) {
		return
	}
	params.Tools = append(params.Tools, anTool{
		Name:        OutputToolName,
		Description: "Give your final answer: its input is your output, which must match this schema.",
		InputSchema: anthropicSchema(o.Schema),
	})
	if len(tools) == 0 {
		params.ToolChoice = &anToolChoice{Type: "tool", Name: OutputToolName}
	} else {
		params.ToolChoice = &anToolChoice{Type: "any"}
	}
}

// usesOutputTool reports whether a request with output o and tools gets the
// output tool: o's root must be an object, and no tool of the agent's may
// have its name (then the reply is only validated).
func usesOutputTool(o *OutputSpec, tools []ToolSpec) bool {
	if o == nil || !o.Object {
		return false
	}
	for _, t := range tools {
		if t.Name == OutputToolName {
			return false
		}
	}
	return true
}

// outputReply makes a reply that calls the output tool the final answer:
// the call's input becomes the reply's text, and any other calls of the
// reply are dropped.
func outputReply(out *ChatResponse) {
	for _, tc := range out.ToolCalls {
		if tc.Name == OutputToolName {
			out.Text = tc.Arguments
			out.ToolCalls = nil
			if out.StopReason == replyToolUse {
				out.StopReason = replyEndTurn
			}
			return
		}
	}
}
