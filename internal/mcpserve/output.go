package mcpserve

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"

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
// when it describes an object; another schema (an array, a string, ...)
// wrapped as the property "result" of an object, as the structured
// content is then: MCP clients written before tools could return other
// values take an outputSchema to be an object's. The dialect and the
// definitions of a wrapped schema move to the root, where its references
// (#/$defs/x) find them. nil: none.
func outputSchema(e *ensemble.Ensemble) any {
	s := e.OutputSchema()
	if s == nil {
		return nil // not a nil map: that would be "outputSchema": null, which clients refuse
	}
	if s["type"] == "object" {
		return s
	}
	inner := maps.Clone(s)
	out := map[string]any{"type": "object", "required": []string{"result"}}
	for _, k := range []string{"$schema", "$defs", "definitions"} {
		if v, ok := inner[k]; ok {
			if _, own := inner["$id"]; own && k != "$schema" {
				continue // its references stay its own
			}
			out[k] = v
			delete(inner, k)
		}
	}
	out["properties"] = map[string]any{"result": inner}
	return out
}

// wrapped reports whether the output of e is wrapped (outputSchema).
func wrapped(e *ensemble.Ensemble) bool {
	s := e.OutputSchema()
	return s != nil && s["type"] != "object"
}

// outputResult is the result of a call whose run succeeded, for a file
// that names its output agent: that agent's output as text (a string as
// it is, anything else as JSON), and an object also as the structured
// content; under a schema that is not an object's, {"result": OUTPUT} is
// both the structured content and the text. redact removes the run's
// secrets from what is sent. A run whose output agent has no output (it
// never ran) is an error result, which says so and holds the run's
// result JSON.
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
	if wrapped(e) {
		b, err := json.Marshal(map[string]any{"result": res.Output})
		if err != nil {
			return nil, err
		}
		text := redact(string(b))
		out := &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: text}}}
		if json.Valid([]byte(text)) {
			out.StructuredContent = json.RawMessage(text)
		}
		return out, nil
	}
	text := redact(jsonvalue.Text(res.Output))
	out := &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: text}}}
	if _, ok := res.Output.(map[string]any); ok && json.Valid([]byte(text)) {
		out.StructuredContent = json.RawMessage(text)
	}
	return out, nil
}
