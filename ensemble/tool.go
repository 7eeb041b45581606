package ensemble

import (
	"regexp"

	"go.yaml.in/yaml/v3"
)

var (
	toolKeys        = []string{"name", "description", "parameters", "script", "allow_outside", "timeout_seconds"}
	toolNamePattern = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`) // what model APIs accept
)

// toolList decodes the tools: list. A tool without parameters takes an empty
// arguments object.
func (d *decoder) toolList(f field) []*Tool {
	var tools []*Tool
	d.tools = map[string]*Tool{}
	for i, n := range d.list(f) {
		m := d.mapping(n, d.itemName("tool", n, "name", i), toolKeys...)
		if m == nil {
			continue
		}
		t := &Tool{Pos: pos(n), Name: d.str(m.get("name")), Description: d.str(m.get("description"))}
		d.need(m.get("name"), t.Name == "")
		switch first := d.tools[t.Name]; {
		case t.Name == "":
		case !toolNamePattern.MatchString(t.Name):
			d.bad(m.get("name"), "%q is invalid: use 1 to 64 of A-Z, a-z, 0-9, _ and -", t.Name)
		case first != nil:
			d.errorf(m.get("name").val, "duplicate tool name %q (first declared on line %d)", t.Name, first.Pos.Line)
		default:
			d.tools[t.Name] = t
		}
		t.Parameters = map[string]any{"type": "object", "properties": map[string]any{}}
		if p := m.get("parameters"); p.ok() {
			t.Parameters = d.object(p)
			if t.Parameters != nil && !d.shallow(p, t.Parameters) {
				t.Parameters = nil
			}
			if typ, ok := t.Parameters["type"]; ok && typ != "object" {
				d.bad(p, "must describe an object (type: object), got type %v", typ)
			}
		}
		t.Script, t.ScriptPath = d.script(m.get("script"), d.boolean(m.get("allow_outside")))
		d.need(m.get("script"), t.Script == "")
		t.Timeout = d.seconds(m.get("timeout_seconds"))
		tools = append(tools, t)
	}
	return d.inheritTools(tools)
}

// object decodes a mapping of free-form values (JSON Schema, parameters).
func (d *decoder) object(f field) map[string]any {
	if resolve(f.val).Kind != yaml.MappingNode {
		d.bad(f, "must be a mapping, got %s", d.describe(f.val))
		return nil
	}
	m, _ := d.value(f).(map[string]any)
	return m
}
