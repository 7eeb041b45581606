package mcpserve

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/ensemble-run/ensemble/engine"
	"github.com/ensemble-run/ensemble/ensemble"
	"github.com/ensemble-run/ensemble/internal/jsonvalue"
)

// returns ends a tool's description: what a call gives back.
func returns(e *ensemble.Ensemble) string {
	if e.Output == "" {
		return " Returns the run's result JSON."
	}
	return fmt.Sprintf(" Returns the output of its agent %s (the run's result JSON when the run fails).", e.Output)
}

// outputSchema is the tool's outputSchema: the ensemble's output schema
// when it describes an object. MCP clients written before tools could
// return other values take an outputSchema to be an object's, and may
// refuse a list of tools in which one is not; the output of another
// schema is given as text alone. nil: none.
func outputSchema(e *ensemble.Ensemble) any {
	s := e.OutputSchema()
	if s == nil || s["type"] != "object" {
		return nil
	}
	return s
}

// outputResult is the result of a call whose run succeeded, for a file
// that names its output agent: that agent's output as text (a string as
// it is, anything else as JSON), and an object also as the structured
// content. redact removes the run's secrets from what is sent. A run
// whose output agent has no output (it never ran) is an error result,
// which says so and holds the run's result JSON.
func outputResult(e *ensemble.Ensemble, res *engine.Result, redact func(string) string) (*mcp.CallToolResult, error) {
	if res.Output == nil {
		var buf bytes.Buffer
		if err := res.WriteJSON(&buf); err != nil {
			return nil, err
		}
		msg := fmt.Sprintf("the run completed, but its output agent %q has no output", e.Output)
		return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{
			&mcp.TextContent{Text: msg}, &mcp.TextContent{Text: redact(buf.String())}}}, nil
	}
	text := redact(jsonvalue.Text(res.Output))
	out := &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: text}}}
	if _, ok := res.Output.(map[string]any); ok && json.Valid([]byte(text)) {
		out.StructuredContent = json.RawMessage(text)
	}
	return out, nil
}
