package ensemble_test

import (
	"os"
	"path/filepath"
	"reflect"
	"testing"

	. "github.com/ensemble-run/ensemble/ensemble"
)

// loadText loads src as an ensemble file of a temporary folder.
func loadText(t *testing.T, src string) (*Ensemble, string, error) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "e.yaml")
	if err := os.WriteFile(path, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	e, err := Load(path, LoadOptions{Kinds: testKinds, LookupEnv: noEnv})
	return e, path, err
}

const outputAgents = `models:
  m: {provider: ollama, model: llama3.2}
agents:
  - name: writer
    model_profile: m
    output_schema:
      type: object
      properties: {title: {type: string}}
      required: [title]
  - name: reviewers
    model_profile: m
    dependencies: [writer]
    fan_out: {over: "['a', 'b']"}
    output_schema:
      $schema: https://json-schema.org/draft/2020-12/schema
      $defs: {verdict: {enum: [yes, no]}}
      type: object
      properties: {verdict: {$ref: "#/$defs/verdict"}}
  - name: strict
    model_profile: m
    dependencies: [writer]
    fan_out: {over: "['a']", on_error: fail}
    output_schema: {type: string}
  - name: plain
    model_profile: m
    dependencies: [writer]
`

func TestOutputNamesTheEnsemblesResult(t *testing.T) {
	t.Parallel()
	final := map[string]any{"writer": map[string]any{"title": "T"}, "reviewers": []any{"x"}}
	tests := []struct {
		output     string
		schema     map[string]any
		result     any
		resultOK   bool
		validOK    any // a value the schema must accept; nil: no check
		validNotOK any // one it must refuse
	}{
		{"", nil, final, true, nil, nil},
		{"writer", map[string]any{"type": "object", "properties": map[string]any{"title": map[string]any{"type": "string"}}, "required": []any{"title"}},
			map[string]any{"title": "T"}, true, map[string]any{"title": "x"}, map[string]any{}},
		// A fan-out's output is the list of its instances' outputs: null
		// for a failed one, unless on_error is fail. The definitions move
		// to the array's root, where the references find them.
		{"reviewers", map[string]any{
			"$schema": "https://json-schema.org/draft/2020-12/schema",
			"$defs":   map[string]any{"verdict": map[string]any{"enum": []any{"yes", "no"}}},
			"type":    "array",
			"items": map[string]any{"anyOf": []any{
				map[string]any{"type": "object", "properties": map[string]any{"verdict": map[string]any{"$ref": "#/$defs/verdict"}}},
				map[string]any{"type": "null"},
			}},
		}, []any{"x"}, true, []any{map[string]any{"verdict": "yes"}, nil}, []any{map[string]any{"verdict": "maybe"}}},
		{"strict", map[string]any{"type": "array", "items": map[string]any{"type": "string"}}, nil, false, []any{"a"}, []any{nil}},
		{"plain", nil, nil, false, nil, nil},
	}
	for _, tt := range tests {
		t.Run(tt.output, func(t *testing.T) {
			t.Parallel()
			src := outputAgents
			if tt.output != "" {
				src = "output: " + tt.output + "\n" + src
			}
			e, _, err := loadText(t, "name: out\n"+src)
			if err != nil {
				t.Fatal(err)
			}
			if e.Output != tt.output {
				t.Errorf("Output = %q, want %q", e.Output, tt.output)
			}
			if got := e.OutputSchema(); !reflect.DeepEqual(got, tt.schema) {
				t.Errorf("OutputSchema() =\n%#v\nwant\n%#v", got, tt.schema)
			}
			got, ok := e.ResultOf(final)
			if ok != tt.resultOK || !reflect.DeepEqual(got, tt.result) {
				t.Errorf("ResultOf = %v, %v; want %v, %v", got, ok, tt.result, tt.resultOK)
			}
			if tt.validOK == nil {
				return
			}
			s, err := CompileOutputSchema(e.OutputSchema())
			if err != nil {
				t.Fatalf("the output schema does not compile: %v", err)
			}
			if err := s.Validate(tt.validOK); err != nil {
				t.Errorf("Validate(%v) = %v", tt.validOK, err)
			}
			if err := s.Validate(tt.validNotOK); err == nil {
				t.Errorf("Validate(%v) = nil, want an error", tt.validNotOK)
			}
		})
	}
}

func TestOutputErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, output string
		want         string // LINE:COL: message
	}{
		{"unknown", "writr", `2:9: output: unknown agent "writr"; did you mean "writer"?`},
		{"unknown far", "zzz", `2:9: output: unknown agent "zzz"`},
		{"empty", `""`, `2:9: output must not be empty`},
		{"list", "[writer]", `2:9: output must be a string, got a list`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, path, err := loadText(t, "name: out\noutput: "+tt.output+"\n"+outputAgents)
			checkErrors(t, err, path, tt.want)
		})
	}
}

func TestInputSchema(t *testing.T) {
	t.Parallel()
	e, _, err := loadText(t, "name: in\ninput: hello\n"+outputAgents)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := e.InputSchema(), map[string]any{"type": "string", "default": "hello"}; !reflect.DeepEqual(got, want) {
		t.Errorf("InputSchema() = %v, want %v", got, want)
	}
	e.Input = ""
	if got, want := e.InputSchema(), map[string]any{"type": "string"}; !reflect.DeepEqual(got, want) {
		t.Errorf("InputSchema() = %v, want %v", got, want)
	}
}
