package ensemble

import "go.yaml.in/yaml/v3"

// IsMapping reports whether the field is written as a mapping: for a
// field a kind takes in two forms (on_timeout: fail, or {answer: ...}).
func (f *Fields) IsMapping(key string) bool {
	fd := f.m.get(key)
	return fd.ok() && resolve(fd.val).Kind == yaml.MappingNode
}

// Value decodes a free-form YAML value as JSON data (maps with string
// keys, finite numbers; null is nil); nil when the field is absent or bad.
func (f *Fields) Value(key string) any {
	fd := f.m.get(key)
	if !fd.ok() {
		return nil
	}
	return f.d.value(fd)
}
