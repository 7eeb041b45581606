package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const schemaEnsemble = "../../features/testdata/outputschema/ensemble.yaml"

// ensembleSchema runs the command with the fake model's URL set (the
// ensemble's profile needs it; the responses keep the model out).
func ensembleSchema(t *testing.T, args ...string) outcome {
	t.Helper()
	return runWith(t, "", func(k string) (string, bool) {
		if k == "FAKE_MODEL_URL" {
			return "http://127.0.0.1:1/v1", true
		}
		if k == "ENSEMBLE_PROFILES" {
			return "", false
		}
		return os.LookupEnv(k)
	}, args...)
}

// `validate` rejects a condition that reads a field the output_schema of
// its agent does not have, with a "did you mean", exit 2.
func TestValidateOutputSchemaTypo(t *testing.T) {
	t.Parallel()
	ens := `name: typo
models:
  m: {provider: ollama, model: llama3.2}
agents:
  - name: reviewer
    model_profile: m
    output_schema: {type: object, properties: {approved: {type: boolean}}}
  - name: publisher
    model_profile: m
    dependencies:
      - agent_name: reviewer
        condition: "context.reviewer.aproved"
`
	o := ensembleCmd(t, ens, "validate", "-")
	want := `<stdin>:12:20: dependency "reviewer" of agent "publisher": condition reads context.reviewer.aproved, but the output_schema of agent "reviewer" has no property "aproved"; did you mean "approved"? (column 18 of the condition)`
	if o.code != 2 || !strings.Contains(o.stderr, want) {
		t.Fatalf("exit %d\n%s%s", o.code, o.stdout, o.stderr)
	}
}

// `run --responses`: an injected reply that fails the schema takes the next
// response as its repair, and a script output that fails its schema fails
// the run (exit 1) with the validation errors.
func TestRunOutputSchema(t *testing.T) {
	t.Parallel()
	responses := filepath.Join(t.TempDir(), "responses.yaml")
	if err := os.WriteFile(responses, []byte(`reviewer:
  - '{"approved": "yes", "comments": []}'
  - {approved: true, comments: [fine]}
`), 0o644); err != nil {
		t.Fatal(err)
	}
	o := ensembleSchema(t, "run", schemaEnsemble, "--responses", responses, "--output", "json")
	if o.code != 0 {
		t.Fatalf("exit %d\n%s%s", o.code, o.stdout, o.stderr)
	}
	var res struct {
		FinalState map[string]any `json:"final_state"`
		History    []struct {
			Agent     string         `json:"agent_name"`
			InputData map[string]any `json:"input_data"`
		} `json:"conversation_history"`
	}
	if err := json.Unmarshal([]byte(o.stdout), &res); err != nil {
		t.Fatalf("%v\n%s", err, o.stdout)
	}
	if got, _ := json.Marshal(res.FinalState["reviewer"]); string(got) != `{"approved":true,"comments":["fine"]}` {
		t.Errorf("reviewer's output %s", got)
	}
	seen := 0
	for _, h := range res.History {
		if h.Agent == "reviewer" {
			seen++
			if h.InputData["injected_response"] != 2.0 {
				t.Errorf("reviewer's input_data %v", h.InputData)
			}
		}
	}
	if seen != 1 {
		t.Errorf("reviewer ran %d times, want 1", seen)
	}

	o = ensembleSchema(t, "run", schemaEnsemble, "--responses", responses, "--input", "empty", "--output", "text")
	if o.code != 1 || !strings.Contains(o.stdout+o.stderr, "the output does not match output_schema: at '/words': minimum: got 0, want 1") {
		t.Fatalf("exit %d\n%s%s", o.code, o.stdout, o.stderr)
	}
}
