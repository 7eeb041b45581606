package script

import (
	"context"
	"reflect"
	"strings"
	"testing"

	"github.com/ensemble-run/ensemble/agent"
)

// A fan-out instance's script gets item, index and count at the end of its
// stdin object, and in its input data; other executions get neither.
func TestScriptStdinOfAnInstance(t *testing.T) {
	t.Parallel()
	e := testEnsemble(t, scriptAgent("echo", "echo.py", nil))
	req := scriptRequest(e, "echo")
	req.Instance = &agent.Instance{Name: "echo[1]", Item: map[string]any{"text": "chunk"}, Index: 1, Count: 3, Seq: 2}
	res := (&Runner{}).Run(context.Background(), req)
	if res.Err != nil {
		t.Fatal(res.Err)
	}
	raw := res.Output.(map[string]any)["raw"].(string)
	if !strings.HasSuffix(raw, `"request_parameters":null,"item":{"text":"chunk"},"index":1,"count":3}`) {
		t.Errorf("stdin %s", raw)
	}
	in := res.InputData.(map[string]any)
	if !reflect.DeepEqual(in["item"], map[string]any{"text": "chunk"}) || in["index"] != 1 || in["count"] != 3 {
		t.Errorf("input data %#v", in)
	}
	res = (&Runner{}).Run(context.Background(), scriptRequest(e, "echo"))
	if raw := res.Output.(map[string]any)["raw"].(string); strings.Contains(raw, `"item"`) || strings.Contains(raw, `"index"`) {
		t.Errorf("stdin of an execution that is no instance: %s", raw)
	}
}
