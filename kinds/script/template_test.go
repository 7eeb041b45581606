package script

import (
	"context"
	"reflect"
	"strings"
	"testing"
)

// An agent with an input template finds the template's value under input
// on stdin, as it is (a map stays a map), and in its input data; its
// dependencies are still there.
func TestScriptStdinInputIsTheTemplatesValue(t *testing.T) {
	t.Parallel()
	e := testEnsemble(t, scriptAgent("echo", "echo.py", nil))
	req := scriptRequest(e, "echo")
	req.Dependencies = map[string]any{"facts": map[string]any{"region": "EMEA"}}
	req.Templates = map[string]any{"input": map[string]any{"region": "EMEA", "n": 3.0}}
	res := (&Runner{}).Run(context.Background(), req)
	if res.Err != nil {
		t.Fatal(res.Err)
	}
	raw := res.Output.(map[string]any)["raw"].(string)
	if !strings.Contains(raw, `"input":{"n":3,"region":"EMEA"}`) || !strings.Contains(raw, `"dependencies":{"facts":{"region":"EMEA"}}`) {
		t.Errorf("stdin %s", raw)
	}
	if in := res.InputData.(map[string]any)["input"]; !reflect.DeepEqual(in, req.Templates["input"]) {
		t.Errorf("input data's input %#v", in)
	}
}
