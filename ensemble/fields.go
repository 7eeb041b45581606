package ensemble

import (
	"maps"
	"slices"
	"strings"
)

// Fields are one agent's fields as its kind decodes them (Kind.Decode).
// Each method decodes the field named key, reporting a problem with
// FILE:LINE:COL and the agent's name as the loader does for every field,
// and returns the zero value when the field is absent or bad.
type Fields struct {
	d     *decoder
	m     fields
	a     *Agent
	where string
	// refused are the agent's common fields its kind refused (Refuse):
	// the loader does not decode them further.
	refused map[string]bool
}

// Where is how messages name the agent: `agent "x"`.
func (f *Fields) Where() string { return f.where }

// Has reports whether the field is written.
func (f *Fields) Has(key string) bool { return f.m.get(key).ok() }

// String decodes any scalar as a string (null as "").
func (f *Fields) String(key string) string { return f.d.str(f.m.get(key)) }

// Bool decodes true or false.
func (f *Fields) Bool(key string) bool { return f.d.boolean(f.m.get(key)) }

// Positive decodes an integer of at least 1.
func (f *Fields) Positive(key string) int { return f.d.positive(f.m.get(key)) }

// Count decodes an integer of at least 0; ok is false when the field is
// absent or bad.
func (f *Fields) Count(key string) (n int, ok bool) {
	fd := f.m.get(key)
	if !f.d.scalar(fd, "an integer", &n, "!!int") {
		return 0, false
	}
	if n < 0 {
		f.d.bad(fd, "must be at least 0, got %d", n)
		return 0, false
	}
	return n, true
}

// Strings decodes a list of strings.
func (f *Fields) Strings(key string) []string { return f.d.strings(f.m.get(key)) }

// Object decodes a mapping of free-form values.
func (f *Fields) Object(key string) map[string]any {
	if !f.Has(key) {
		return nil
	}
	return f.d.object(f.m.get(key))
}

// Env decodes a mapping of environment variable names to values.
func (f *Fields) Env(key string) map[string]string { return f.d.env(f.m.get(key)) }

// Require reports the field when it is absent, or written but empty
// (empty is the decoded value's emptiness).
func (f *Fields) Require(key string, empty bool) { f.d.need(f.m.get(key), empty) }

// Refuse reports a field the kind's agents do not take, though agents of
// other kinds do (output_schema, fan_out): `agent "x": KEY is not for K
// agents, <why>`, at the key, when it is written. The loader then leaves
// the field undecoded.
func (f *Fields) Refuse(key string, k Kind, why string) {
	fd := f.m.get(key)
	if !fd.ok() {
		return
	}
	f.d.errorf(fd.key, "%s: %s is not for %s agents, %s", f.where, key, k, why)
	if f.refused == nil {
		f.refused = map[string]bool{}
	}
	f.refused[key] = true
}

// Template decodes a string that may hold `{{ EXPR }}` placeholders: a
// template (docs/semantics.md#what-an-agent-receives), compiled and checked
// as the agent's input is, and added to the agent's Templates, which the
// engine evaluates for each execution. It returns the string and the
// template; nil when the string has no `{{` (it is used as it is), or the
// field is absent or bad.
func (f *Fields) Template(key string) (string, *Template) {
	fd := f.m.get(key)
	s := f.d.str(fd)
	if !strings.Contains(s, "{{") {
		return s, nil
	}
	return s, f.d.template(fd, f.a, f.Has("fan_out"))
}

// Bad reports a problem with the field's value: `agent "x": KEY <message>`.
func (f *Fields) Bad(key, format string, args ...any) { f.d.bad(f.m.get(key), format, args...) }

// Script decodes the path of a script, resolved against the ensemble file's
// folder, and checks that it can run: see docs/format.md. allowOutside
// lets it lie outside that folder.
func (f *Fields) Script(key string, allowOutside bool) (script, path string) {
	return f.d.script(f.m.get(key), allowOutside)
}

// ContextWindow decodes a context_window block (docs/llm.md#messages-and-memory).
func (f *Fields) ContextWindow(key string) *ContextWindow { return f.d.contextWindow(f.m.get(key)) }

// ModelProfile decodes the name of a model profile, which the file or a
// profiles file must declare.
func (f *Fields) ModelProfile(key string) string {
	fd := f.m.get(key)
	name := f.d.str(fd)
	if name != "" && f.d.models[name] == nil {
		f.d.errorf(fd.val, "%s: unknown %s %q%s", f.where, key, name, suggest(name, slices.Sorted(maps.Keys(f.d.models))))
	}
	return name
}

// Tools decodes a list of tool names, each declared by the file and listed
// once.
func (f *Fields) Tools(key string) []string {
	names := f.d.strings(f.m.get(key))
	f.d.agentTools(f.m.get(key), names, f.where)
	return names
}
