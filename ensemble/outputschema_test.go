package ensemble_test

import (
	"path/filepath"
	"strings"
	"testing"

	. "github.com/ensemble-run/ensemble/ensemble"
	"github.com/ensemble-run/ensemble/kinds/llm"
)

func TestOutputSchemaLoads(t *testing.T) {
	t.Parallel()
	e := loadOK(t, "output-schema.yaml", LoadOptions{Kinds: testKinds})
	w, r, o, p := e.Agent("writer"), e.Agent("reviewer"), e.Agent("open"), e.Agent("publish")
	if w.OutputSchema == nil || w.OutputSchema.Ref != "" || w.OutputSchema.Doc["type"] != "object" {
		t.Fatalf("writer: %+v", w.OutputSchema)
	}
	if got := llm.SpecOf(w).OutputRepairs; got != 2 {
		t.Errorf("writer output_repairs = %d, want 2", got)
	}
	if got := llm.SpecOf(r).OutputRepairs; got != llm.DefaultOutputRepairs {
		t.Errorf("reviewer output_repairs = %d, want the default", got)
	}
	if r.OutputSchema == nil || r.OutputSchema.Ref != "schemas/review.json" || r.OutputSchema.Doc["additionalProperties"] != false {
		t.Fatalf("reviewer: %+v", r.OutputSchema)
	}
	if o.OutputSchema == nil || p.OutputSchema != nil {
		t.Fatalf("open: %+v, publish: %+v", o.OutputSchema, p.OutputSchema)
	}
	if !(llm.Kind{}).JSONReply(w) {
		t.Error("an output_schema must imply output_format json")
	}
	for _, c := range []struct {
		v    any
		want string // "" = valid
	}{
		{map[string]any{"approved": true}, ""},
		{map[string]any{"approved": true, "notes": map[string]any{"score": 4}}, ""},
		{map[string]any{"approved": "yes"}, "at '/approved': got string, want boolean"},
		{map[string]any{}, "missing property 'approved'"},
		{map[string]any{"approved": true, "extra": 1}, "additional properties 'extra' not allowed"},
		{"text", "got string, want object"},
	} {
		err := r.OutputSchema.Validate(c.v)
		switch {
		case c.want == "" && err != nil:
			t.Errorf("Validate(%v) = %v, want nil", c.v, err)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
			t.Errorf("Validate(%v) = %v, want %q", c.v, err, c.want)
		}
	}
}

func TestOutputSchemaErrors(t *testing.T) {
	t.Parallel()
	_, err := Load(filepath.Join("testdata", "output-schema-errors.yaml"), LoadOptions{Kinds: testKinds, LookupEnv: noEnv})
	checkErrors(t, err, filepath.Join("testdata", "output-schema-errors.yaml"),
		`8:20: agent "writer": output_format is text, but the agent has an output_schema, which implies json`,
		`12:21: agent "reviewer": output_repairs must be at least 0, got -1`,
		`16:20: agent "bad": output_schema is not a valid JSON Schema`,
		`20:20: agent "missing": output_schema $ref "schemas/nope.json" cannot be read: no such file or directory`,
		`23:20: agent "broken": output_schema $ref "schemas/broken.json" is not JSON`,
		`26:21: agent "plain": output_repairs needs an output_schema`,
		`29:5: agent "human": output_schema is not for ask agents, which ask a person`,
		`32:20: agent "listy": output_schema must be a JSON Schema (a mapping) or {$ref: FILE}, got a list`,
		`37:20: dependency "reviewer" of agent "publish": condition reads context.reviewer.aproved, but the output_schema of agent "reviewer" has no property "aproved"; did you mean "approved"? (column 18 of the condition)`,
		`39:20: dependency "writer" of agent "publish": condition reads context.writer.titel, but the output_schema of agent "writer" has no property "titel"; did you mean "title"? (line 2, column 19 of the condition)`,
		`43:13: fan_out of agent "publish": over reads context.reviewer.notes.scores, but the output_schema of agent "reviewer" has no property "scores"; did you mean "score"? (column 24 of the fan_out.over)`,
		`48:17: dependency "reviewer" of agent "picker": select reads output.notes.scor, but the output_schema of agent "reviewer" has no property "scor"; did you mean "score"? (column 48 of the select)`,
		`54:20: agent "outside": output_schema $ref "../outputschema.go" is outside the ensemble file's folder`,
	)
}

// OutputSchema.Field follows the properties a schema lists, and stops where
// the schema allows other properties.
func TestOutputSchemaField(t *testing.T) {
	t.Parallel()
	s, err := CompileOutputSchema(map[string]any{
		"type": "object",
		"properties": map[string]any{
			"a":    map[string]any{"type": "object", "properties": map[string]any{"b": map[string]any{}}},
			"open": map[string]any{"type": "object", "properties": map[string]any{"x": map[string]any{}}, "additionalProperties": true},
			"any":  map[string]any{"anyOf": []any{map[string]any{"type": "object"}}, "properties": map[string]any{"x": map[string]any{}}},
			"list": map[string]any{"type": "array"},
		},
		"required": []any{"a", "undescribed"},
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		path    string
		at      int
		unknown string
	}{
		{"a", 0, ""}, {"a.b", 0, ""}, {"a.c", 1, "c"}, {"z", 0, "z"}, {"undescribed.q", 0, ""},
		{"open.anything", 0, ""}, {"any.anything", 0, ""}, {"list.x", 0, ""}, {"a.b.deeper", 0, ""},
	} {
		at, unknown, _ := s.Field(strings.Split(tt.path, "."))
		if at != tt.at || unknown != tt.unknown {
			t.Errorf("Field(%s) = %d %q, want %d %q", tt.path, at, unknown, tt.at, tt.unknown)
		}
	}
}
