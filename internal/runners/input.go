package runners

import (
	"fmt"
	"strings"

	"github.com/ensemble-run/ensemble/agent"
	"github.com/ensemble-run/ensemble/internal/jsonvalue"
)

// Given is the text of the agent's input template for this execution
// (a value that is not a string as compact JSON); ok is false when the
// agent has none, and is then given the Labelled text.
func Given(req *agent.Request) (text string, ok bool) {
	v, ok := req.Template("input")
	if !ok {
		return "", false
	}
	return jsonvalue.Text(v), true
}

// Labelled is the labelled text an execution is given as a message
// (docs/llm.md#messages-and-memory): a fan-out instance's item (`Item 2 of
// 5:`), or else the run's input when withInput (`Input:`), the outputs of
// deps in that order (`Output of NAME:`), and the request parameters; a
// string as it is, anything else as compact JSON, sections apart by a blank
// line. "" when there is nothing to say. An LLM agent's user message and a
// child ensemble's input are built with it.
func Labelled(req *agent.Request, withInput bool, deps []string) string {
	var b strings.Builder
	section := func(label, body string) {
		if b.Len() > 0 {
			b.WriteString("\n\n")
		}
		b.WriteString(label)
		b.WriteString(":\n")
		b.WriteString(body)
	}
	if in := req.Instance; in != nil {
		// A fan-out instance: its item instead of the run's input
		// (docs/semantics.md#fan-out).
		section(fmt.Sprintf("Item %d of %d", in.Index+1, in.Count), jsonvalue.Text(in.Item))
	} else if withInput && strings.TrimSpace(req.Input) != "" {
		section("Input", req.Input)
	}
	for _, name := range deps {
		section("Output of "+name, jsonvalue.Text(req.Dependencies[name]))
	}
	if len(req.RequestParameters) > 0 {
		section("Request parameters", jsonvalue.Text(req.RequestParameters))
	}
	return b.String()
}
