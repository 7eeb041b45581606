package ensemble

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"go.yaml.in/yaml/v3"
	"golang.org/x/text/language"
	"golang.org/x/text/message"

	"github.com/ensemble-run/ensemble/internal/readcap"
)

// OutputSchema is an agent's output_schema (docs/format.md#output-schemas):
// a JSON Schema its outputs must satisfy, compiled when the file loads.
type OutputSchema struct {
	Pos Pos
	// Ref is the schema's file as written ({$ref: schemas/x.json}); "" when
	// the schema is inline.
	Ref string
	// Doc is the schema as JSON values (the file's content for a Ref): what
	// is sent to a model's native structured output.
	Doc    map[string]any
	schema *jsonschema.Schema
}

// Validate checks v (an output: JSON values) against the schema. The error
// lists every failing location on one line, e.g.
// `at '/approved': got string, want boolean`.
func (s *OutputSchema) Validate(v any) error {
	if s == nil || s.schema == nil {
		return nil
	}
	err := s.schema.Validate(v)
	if err == nil {
		return nil
	}
	if ve, ok := errors.AsType[*jsonschema.ValidationError](err); ok {
		return errors.New(ValidationMessage(ve))
	}
	return err
}

// ValidationMessage flattens a schema validation error into one part per
// failing location, joined by "; ": `at '/region': got number, want string`.
func ValidationMessage(ve *jsonschema.ValidationError) string {
	var leaves []string
	var walk func(e *jsonschema.ValidationError)
	walk = func(e *jsonschema.ValidationError) {
		if len(e.Causes) == 0 {
			loc := "/" + strings.Join(e.InstanceLocation, "/")
			leaves = append(leaves, fmt.Sprintf("at '%s': %s", loc, e.ErrorKind.LocalizedString(enPrinter)))
			return
		}
		for _, c := range e.Causes {
			walk(c)
		}
	}
	walk(ve)
	if len(leaves) == 0 {
		return ve.Error()
	}
	return strings.Join(leaves, "; ")
}

// IsObject reports whether the schema's root says type: object, which is
// what OpenAI's and Anthropic's native structured output require.
func (s *OutputSchema) IsObject() bool {
	return s != nil && s.Doc["type"] == "object"
}

// Field looks up the property path (a.b.c) of the output in the schema, as
// a condition reading context.<key>.a.b.c does. unknown is the first
// element the schema rules out, with the properties it names instead;
// unknown is "" when the path is allowed or the schema cannot tell (no
// properties listed, additionalProperties or patternProperties, or a
// composition such as allOf or $ref at that level).
func (s *OutputSchema) Field(path []string) (at int, unknown string, known []string) {
	node := s.Doc
	for i, name := range path {
		props, ok := node["properties"].(map[string]any)
		if !ok || open(node) {
			return 0, "", nil
		}
		next, ok := props[name]
		if !ok {
			required, _ := node["required"].([]any)
			if slices.Contains(required, any(name)) {
				return 0, "", nil // required but not described: allowed
			}
			return i, name, slices.Sorted(maps.Keys(props))
		}
		if node, ok = next.(map[string]any); !ok {
			return 0, "", nil
		}
	}
	return 0, "", nil
}

// open reports whether a schema node may allow properties it does not list.
func open(node map[string]any) bool {
	if ap, ok := node["additionalProperties"]; ok && ap != false {
		return true
	}
	for _, k := range []string{"patternProperties", "$ref", "$dynamicRef", "allOf", "anyOf", "oneOf", "if", "dependentSchemas", "unevaluatedProperties"} {
		if _, ok := node[k]; ok {
			return true
		}
	}
	return false
}

// outputSchema decodes an agent's output_schema: an inline JSON Schema, or
// {$ref: FILE} naming a JSON (or YAML) file relative to the ensemble file,
// inside its folder. The schema is compiled here (draft 2020-12 unless its
// $schema says otherwise; references outside it are never loaded).
func (d *decoder) outputSchema(f field, where string) *OutputSchema {
	if !f.ok() {
		return nil
	}
	if resolve(f.val).Kind != yaml.MappingNode {
		d.bad(f, "must be a JSON Schema (a mapping) or {$ref: FILE}, got %s", d.describe(f.val))
		return nil
	}
	doc := d.object(f)
	if doc == nil {
		return nil
	}
	s := &OutputSchema{Pos: pos(f.val), Doc: doc}
	if ref, ok := doc["$ref"].(string); ok && len(doc) == 1 && !strings.HasPrefix(ref, "#") {
		s.Ref = ref
		if s.Doc = d.schemaFile(f, ref); s.Doc == nil {
			return nil
		}
	}
	if !d.shallow(f, s.Doc) {
		return nil
	}
	sch, err := compileSchema(s.Doc, "urn:ensemble:output:"+strings.ReplaceAll(where, " ", "-"))
	if err != nil {
		d.bad(f, "%s", err)
		return nil
	}
	s.schema = sch
	return s
}

// MaxSchemaDepth is how deeply the objects and lists of an output_schema or
// of a tool's parameters may nest, and MaxSchemaNodes how many of them it
// may hold (docs/format.md#output-schemas). The JSON Schema compiler walks
// a schema recursively, with work per level that grows with the depth
// (3,000 levels never finished), and its work for n subschemas grows as
// n² (50,000 properties took 24 s; 5,000 take 0.4 s): bounds well above
// what the providers' native structured output accept keep every load
// short, rather than a copy of the compiler kept here to fix it.
const (
	MaxSchemaDepth = 64
	MaxSchemaNodes = 10_000
)

// shallow reports whether doc is within MaxSchemaDepth and MaxSchemaNodes,
// and reports it at f when it is not.
func (d *decoder) shallow(f field, doc map[string]any) bool {
	if msg := schemaTooLarge(doc); msg != "" {
		d.bad(f, "%s", msg)
		return false
	}
	return true
}

// CheckSchemaSize refuses a schema past MaxSchemaDepth or MaxSchemaNodes
// (one an MCP server gives for a tool, checked as the file's are).
func CheckSchemaSize(doc map[string]any) error {
	if msg := schemaTooLarge(doc); msg != "" {
		return errors.New(msg)
	}
	return nil
}

// schemaTooLarge says how doc is past MaxSchemaDepth or MaxSchemaNodes,
// or "" when it is within both.
func schemaTooLarge(doc map[string]any) string {
	if depthOver(doc, MaxSchemaDepth) {
		return fmt.Sprintf("nests deeper than %d levels of objects and lists; flatten it, or describe the deep part as {type: object}", MaxSchemaDepth)
	}
	left := MaxSchemaNodes
	if nodesOver(doc, &left) {
		return fmt.Sprintf("holds more than %d objects and lists (subschemas); split the output, or describe parts of it as {type: object}", MaxSchemaNodes)
	}
	return ""
}

// depthOver reports whether v's maps and lists nest more than limit levels
// deep; it stops descending at limit, so its work is bounded by the values
// within limit levels.
func depthOver(v any, limit int) bool {
	switch x := v.(type) {
	case map[string]any:
		if limit == 0 {
			return true
		}
		for _, e := range x {
			if depthOver(e, limit-1) {
				return true
			}
		}
	case []any:
		if limit == 0 {
			return true
		}
		for _, e := range x {
			if depthOver(e, limit-1) {
				return true
			}
		}
	}
	return false
}

// nodesOver reports whether v holds more maps and lists than *left,
// counting them off; it stops as soon as it is.
func nodesOver(v any, left *int) bool {
	switch x := v.(type) {
	case map[string]any:
		if *left--; *left < 0 {
			return true
		}
		for _, e := range x {
			if nodesOver(e, left) {
				return true
			}
		}
	case []any:
		if *left--; *left < 0 {
			return true
		}
		for _, e := range x {
			if nodesOver(e, left) {
				return true
			}
		}
	}
	return false
}

// CompileOutputSchema compiles doc (JSON values) as an output_schema, for
// ensembles built by hand; the loader compiles the file's.
func CompileOutputSchema(doc map[string]any) (*OutputSchema, error) {
	if msg := schemaTooLarge(doc); msg != "" {
		return nil, fmt.Errorf("the schema %s", msg)
	}
	sch, err := compileSchema(doc, "urn:ensemble:output")
	if err != nil {
		return nil, err
	}
	return &OutputSchema{Doc: doc, schema: sch}, nil
}

func compileSchema(doc map[string]any, url string) (*jsonschema.Schema, error) {
	raw, err := json.Marshal(doc)
	if err != nil {
		return nil, fmt.Errorf("cannot be encoded as JSON: %v", err)
	}
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		return nil, fmt.Errorf("is not valid JSON: %v", err)
	}
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	c.UseLoader(noLoader{})
	if err := c.AddResource(url, inst); err != nil {
		return nil, fmt.Errorf("is not a valid JSON Schema: %s", oneLine(err.Error()))
	}
	sch, err := c.Compile(url)
	if err != nil {
		return nil, fmt.Errorf("is not a valid JSON Schema: %s", oneLine(err.Error()))
	}
	return sch, nil
}

// schemaFile reads the schema file of output_schema: {$ref: FILE}.
func (d *decoder) schemaFile(f field, ref string) map[string]any {
	path := ref
	if !filepath.IsAbs(path) {
		path = filepath.Join(d.dir, path)
	}
	data, err := readcap.ReadFile(path, MaxFileSize)
	if err == nil && !d.inside(path) {
		d.bad(f, "$ref %q is outside %s", ref, d.boundary())
		return nil
	}
	if _, ok := errors.AsType[*readcap.TooLargeError](err); ok {
		d.bad(f, "$ref %q is larger than %d MiB", ref, MaxFileSize>>20)
		return nil
	}
	if err != nil {
		if pe, ok := errors.AsType[*os.PathError](err); ok {
			err = pe.Err
		}
		d.bad(f, "$ref %q cannot be read: %v", ref, err)
		return nil
	}
	var n yaml.Node
	if err := yaml.Unmarshal(data, &n); err != nil { // JSON is YAML
		d.bad(f, "$ref %q is not JSON: %s", ref, oneLine(strings.TrimPrefix(err.Error(), "yaml: ")))
		return nil
	}
	v, ok, err := yamlValue(&n)
	if err != nil {
		d.bad(f, "$ref %q is not JSON: %s", ref, oneLine(err.Error()))
		return nil
	}
	m, isMap := v.(map[string]any)
	if !ok || !isMap {
		d.bad(f, "$ref %q must hold a JSON Schema object", ref)
		return nil
	}
	return m
}

// noLoader refuses every external reference: schemas are self-contained.
type noLoader struct{}

func (noLoader) Load(url string) (any, error) {
	return nil, fmt.Errorf("external schema references are not loaded (%s)", url)
}

var enPrinter = message.NewPrinter(language.English)

// oneLine joins the lines of a message.
func oneLine(s string) string {
	return strings.Join(strings.Fields(s), " ")
}

// agentOutputSchema decodes an agent's output_schema (a kind whose agents
// take none refuses it: Fields.Refuse).
func (d *decoder) agentOutputSchema(f field, where string) *OutputSchema {
	if !f.ok() {
		return nil
	}
	return d.outputSchema(f, where)
}

// contextFields checks, once every agent is decoded, the fields that
// conditions, selects and fan_out.over read below a context key against
// the output_schema of the agent with that state key: context.reviewer.aproved
// where the schema lists only approved is a load error with a "did you mean".
// A fan-out agent's output is a list of its instances' outputs, so its
// schema (of one instance's output) does not describe context.<key>.
func (d *decoder) contextFields(agents []*Agent) {
	byKey, byName := map[string]*Agent{}, map[string]*Agent{}
	for _, a := range agents {
		if a.OutputSchema != nil && a.FanOut == nil {
			byKey[a.StateKey()] = a
			if byName[a.Name] == nil {
				byName[a.Name] = a
			}
		}
	}
	if len(byKey) == 0 {
		return
	}
	d.selectFields(byName)
	for _, c := range d.conds {
		for _, cf := range c.p.ContextFields {
			a := byKey[cf.Path[0]]
			if a == nil {
				continue
			}
			at, name, known := a.OutputSchema.Field(cf.Path[1:])
			if name == "" || at != len(cf.Path)-2 {
				continue // allowed, or reported at its own (shorter) path
			}
			d.badName(c, cf.Line, cf.Column, "reads context.%s, but the output_schema of agent %q has no property %q%s (%s)",
				strings.Join(cf.Path, "."), a.Name, name, suggest(name, known), exprAt(cf.Line, cf.Column, c.what))
		}
	}
}

// selectRef is a compiled select and its field.
type selectRef struct {
	f   field
	dep *Dependency
}

// selectFields checks the fields a select reads below output against the
// output_schema of the dependency's agent (edges on: failure deliver a
// failure, not an output, and are left alone).
func (d *decoder) selectFields(byName map[string]*Agent) {
	for _, s := range d.selects {
		a := byName[s.dep.AgentName]
		if a == nil || a.OutputSchema == nil || a.FanOut != nil || s.dep.OnFailure || s.dep.OnAlways || s.dep.SelectProgram.get() == nil {
			continue
		}
		for _, of := range s.dep.SelectProgram.get().OutputFields {
			at, name, known := a.OutputSchema.Field(of.Path)
			if name == "" || at != len(of.Path)-1 {
				continue
			}
			d.bad(s.f, "reads output.%s, but the output_schema of agent %q has no property %q%s (%s)",
				strings.Join(of.Path, "."), a.Name, name, suggest(name, known), exprAt(of.Line, of.Column, "select"))
		}
	}
}

// exprAt is where in an expression a problem is: `column 3 of the
// condition`, or `line 2, column 3 of the select`.
func exprAt(line, col int, what string) string {
	at := fmt.Sprintf("column %d of the %s", col, what)
	if line > 1 {
		at = fmt.Sprintf("line %d, %s", line, at)
	}
	return at
}
