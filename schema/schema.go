// Package schema holds the JSON Schema (draft 2020-12) of the ensemble file
// format, for editors: yaml-language-server (VS Code's YAML extension,
// Neovim, Helix, ...) reads it to complete keys, show their documentation
// and flag mistakes as you type.
//
// The schema is kept by hand beside the loader and follows its rules: the
// known keys of every mapping (additionalProperties: false; top-level x-
// keys are extensions), exactly one kind per agent and the fields of each
// kind, the enums, minimums and name patterns, the context_window and
// api_key_env rules. What a schema cannot say is left to `ensemble
// validate`: references between names (dependencies, model_profile, tools,
// max_agent_executions), duplicates, conditions that must compile, script
// files that must exist, agents that can never run. The schema is also a
// little stricter than the loader in one way: text fields must be YAML
// strings (optional ones may be left empty, null), where the loader takes
// any scalar (a bare number as input, say). And a little looser where JSON
// cannot tell: 1.0 is the integer 1 to a JSON Schema, so version: 1.0 and
// max_turns: 2.0 pass it, while the loader asks for plain integers.
//
// Tests check that every example and every file the loader accepts is
// valid, and that broken files are not.
//
// Part of the public API (go doc github.com/ensemble-run/ensemble).
package schema

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"sync"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"go.yaml.in/yaml/v3"

	"github.com/ensemble-run/ensemble/internal/jsonvalue"
)

// JSON is the schema document.
//
//go:embed ensemble.schema.json
var JSON []byte

// ID is the schema's $id.
const ID = "https://raw.githubusercontent.com/ensemble-run/ensemble/main/schema/ensemble.schema.json"

var compiled = sync.OnceValues(func() (*jsonschema.Schema, error) {
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(JSON))
	if err != nil {
		return nil, err
	}
	c := jsonschema.NewCompiler()
	if err := c.AddResource(ID, doc); err != nil {
		return nil, err
	}
	return c.Compile(ID)
})

// Compiled returns the schema, compiled once.
func Compiled() (*jsonschema.Schema, error) { return compiled() }

// ValidateYAML checks an ensemble file's YAML against the schema. The YAML
// is read as data first (anchors, aliases and merge keys resolved), as an
// editor sees it. The error is a *jsonschema.ValidationError when the file
// does not follow the schema.
func ValidateYAML(data []byte) error {
	sch, err := Compiled()
	if err != nil {
		return err
	}
	v, err := FromYAML(data)
	if err != nil {
		return err
	}
	return sch.Validate(v)
}

// FromYAML decodes YAML into the JSON data model that the validator takes.
func FromYAML(data []byte) (any, error) {
	var v any
	if err := yaml.Unmarshal(data, &v); err != nil {
		return nil, err
	}
	v, _ = jsonvalue.FromYAML(v) // the schema checks values, not whether numbers are finite
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	return jsonschema.UnmarshalJSON(bytes.NewReader(b))
}
