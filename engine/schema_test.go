package engine_test

import (
	"context"
	"os"
	"strings"
	"testing"

	"github.com/ensemble-run/ensemble/engine"
	"github.com/ensemble-run/ensemble/ensemble"
	"github.com/ensemble-run/ensemble/kinds"
	scriptkind "github.com/ensemble-run/ensemble/kinds/script"
)

// TestOutputSchemaFailsOnlyItsExecution: through the engine, an output that
// fails its agent's output_schema fails that execution (recorded, with the
// validation errors), its dependent does not run, and the agent beside it
// whose output fits goes on.
func TestOutputSchemaFailsOnlyItsExecution(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	for name, body := range map[string]string{
		"wrong.sh": "cat >/dev/null\necho '{\"approved\": \"yes\"}'\n",
		"right.sh": "cat >/dev/null\necho '{\"approved\": true}'\n",
		"next.sh":  "cat >/dev/null\necho done\n",
	} {
		if err := os.WriteFile(dir+"/"+name, []byte("#!/bin/sh\n"+body), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	yaml := `name: schemas
agents:
  - name: wrong
    script: wrong.sh
    output_schema: {type: object, properties: {approved: {type: boolean}}, required: [approved]}
  - name: right
    script: right.sh
    output_schema: {type: object, properties: {approved: {type: boolean}}, required: [approved]}
  - {name: after_wrong, script: next.sh, dependencies: [wrong]}
  - {name: after_right, script: next.sh, dependencies: [right]}
`
	e, err := ensemble.LoadBytes(dir+"/ensemble.yaml", []byte(yaml), kinds.Builtin().Load(ensemble.LoadOptions{}))
	if err != nil {
		t.Fatal(err)
	}
	res := engine.New(e, "in", engine.Options{Runner: &scriptkind.Runner{}}).Run(context.Background())
	if res.CompletionReason != engine.Completed || res.ExitCode() != engine.ExitFailed {
		t.Fatalf("reason %q exit %d", res.CompletionReason, res.ExitCode())
	}
	if len(res.Errors) != 1 || res.Errors[0].AgentName != "wrong" ||
		!strings.Contains(res.Errors[0].Message, "the output does not match output_schema: at '/approved'") {
		t.Fatalf("errors %+v", res.Errors)
	}
	if _, ok := res.FinalState["wrong"]; ok {
		t.Errorf("the output that failed its schema is in the state: %v", res.FinalState["wrong"])
	}
	if res.AgentExecutionCount["after_wrong"] != 0 || res.AgentExecutionCount["after_right"] != 1 {
		t.Errorf("executions %v", res.AgentExecutionCount)
	}
}
