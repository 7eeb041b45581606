package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A condition comparing a judge's verdict with a value its output_schema
// rules out ('APPROVED' where the enum says APPROVE) would skip the
// approval on every run, exit 0: validate refuses the file, exit 2, with
// the values the schema allows and the closest one.
func TestValidateRefusesALiteralTheSchemaRulesOut(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "review.yaml")
	src := `name: review
models:
  m: {provider: ollama, model: llama3.2}
agents:
  - name: judge
    model_profile: m
    output_schema:
      type: object
      properties:
        verdict: {type: string, enum: [APPROVE, REJECT]}
      required: [verdict]
  - name: approval
    model_profile: m
    dependencies:
      - agent_name: judge
        condition: "context.judge.verdict == 'APPROVED'"
`
	if err := os.WriteFile(path, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	o := ensembleCmd(t, "", "validate", path)
	want := path + `:16:20: dependency "judge" of agent "approval": condition compares context.judge.verdict with 'APPROVED', ` +
		`but 'APPROVED' is not one of "APPROVE", "REJECT", the values the output_schema of agent "judge" allows there, ` +
		`so the == is always false; did you mean "APPROVE"? (column 26 of the condition)`
	if o.code != 2 || !strings.Contains(o.stderr, want) {
		t.Errorf("validate: exit %d, want 2 and\n%s\nstderr:\n%s", o.code, want, o.stderr)
	}
	// The fix loads.
	if err := os.WriteFile(path, []byte(strings.Replace(src, "'APPROVED'", "'APPROVE'", 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	if o := ensembleCmd(t, "", "validate", path); o.code != 0 {
		t.Errorf("validate of the fixed file: exit %d\n%s", o.code, o.stderr)
	}
}
