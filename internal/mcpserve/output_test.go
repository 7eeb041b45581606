package mcpserve

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestToolReturnsTheEnsemblesOutput: a file that names its output agent
// is a tool whose result is that agent's output (an object as structured
// content too, under the agent's schema as the tool's outputSchema; other
// values as text); without output:, the result is the run's result JSON.
func TestToolReturnsTheEnsemblesOutput(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	files := map[string]string{
		"judge.sh": "#!/bin/sh\ncat >/dev/null\necho '{\"verdict\": \"yes\"}'\n",
		"words.sh": "#!/bin/sh\ncat >/dev/null\necho '\"plain words\"'\n",
		"review.yaml": `name: review
output: judge
agents:
  - name: draft
    script: words.sh
  - name: judge
    script: judge.sh
    dependencies: [draft]
    output_schema:
      type: object
      properties: {verdict: {enum: ["yes", "no"]}}
      required: [verdict]
`,
		"words.yaml": "name: words\noutput: draft\nagents:\n  - name: draft\n    script: words.sh\n",
		"whole.yaml": "name: whole\nagents:\n  - name: draft\n    script: words.sh\n",
		"never.yaml": `name: never
output: judge
agents:
  - name: draft
    script: words.sh
  - name: judge
    script: judge.sh
    dependencies: [draft]
    when: "context.draft == 'go'"
`,
	}
	for name, body := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	server, err := New(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	st, ct := mcp.NewInMemoryTransports()
	ss, err := server.Connect(t.Context(), st, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ss.Close()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil).Connect(t.Context(), ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()

	schemas := map[string]any{}
	for tool, err := range cs.Tools(t.Context(), nil) {
		if err != nil {
			t.Fatal(err)
		}
		schemas[tool.Name] = tool.OutputSchema
	}
	want := map[string]any{"type": "object", "properties": map[string]any{"verdict": map[string]any{"enum": []any{"yes", "no"}}}, "required": []any{"verdict"}}
	if !reflect.DeepEqual(schemas["review"], want) {
		t.Errorf("review's outputSchema %#v, want %#v", schemas["review"], want)
	}
	for _, name := range []string{"words", "whole", "never"} {
		if schemas[name] != nil {
			t.Errorf("%s has an outputSchema: %#v", name, schemas[name])
		}
	}

	call := func(name string) *mcp.CallToolResult {
		t.Helper()
		res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: name})
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	text := func(res *mcp.CallToolResult, i int) string {
		t.Helper()
		if len(res.Content) <= i {
			t.Fatalf("%d contents, want %d or more", len(res.Content), i+1)
		}
		return res.Content[i].(*mcp.TextContent).Text
	}

	res := call("review")
	if res.IsError || text(res, 0) != `{"verdict":"yes"}` || !reflect.DeepEqual(res.StructuredContent, map[string]any{"verdict": "yes"}) {
		t.Errorf("review: error %v, %q, structured %#v", res.IsError, text(res, 0), res.StructuredContent)
	}
	res = call("words")
	if res.IsError || text(res, 0) != "plain words" || res.StructuredContent != nil {
		t.Errorf("words: error %v, %q, structured %#v", res.IsError, text(res, 0), res.StructuredContent)
	}
	res = call("whole")
	var whole map[string]any
	if err := json.Unmarshal([]byte(text(res, 0)), &whole); err != nil || res.IsError || whole["completion_reason"] != "completed" || whole["output"] != nil {
		t.Errorf("whole: error %v, %v: %s", res.IsError, err, text(res, 0))
	}
	res = call("never")
	if !res.IsError || !strings.Contains(text(res, 0), `its output agent "judge" has no output`) || !strings.Contains(text(res, 1), `"completion_reason": "completed"`) {
		t.Errorf("never: error %v, %v", res.IsError, res.Content)
	}
}
