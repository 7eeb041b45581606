// Package jsonvalue holds the helpers for JSON values as the project handles
// them: the values encoding/json decodes into an any (map[string]any, []any,
// string, float64, bool, nil), which outputs, injected responses and
// conditions are made of (docs/semantics.md#outputs). One implementation,
// used by every package that needs one.
package jsonvalue

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"strings"
)

// Decode returns v as encoding/json would decode its JSON: numbers become
// float64, structs and typed maps become map[string]any, and so on. It
// fails when v has no JSON form.
func Decode(v any) (any, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	var out any
	if err := json.Unmarshal(b, &out); err != nil {
		return nil, err
	}
	return out, nil
}

// Normalize returns v as encoding/json would decode its JSON, or v itself
// when it has no JSON form.
func Normalize(v any) any {
	out, err := Decode(v)
	if err != nil {
		return v
	}
	return out
}

// Plain returns v as the JSON-decoded value conditions expect, or nil when
// it has no JSON form. A value whose outer type is already one of decoded
// JSON's is returned as it is, without a round trip.
func Plain(v any) any {
	switch v.(type) {
	case nil, string, bool, float64, map[string]any, []any:
		return v
	}
	out, err := Decode(v)
	if err != nil {
		return nil
	}
	return out
}

// Copy copies v's maps and lists, deeply, so that whoever changes the copy
// cannot change v. Other values are shared.
func Copy(v any) any {
	switch x := v.(type) {
	case map[string]any:
		m := make(map[string]any, len(x))
		for k, e := range x {
			m[k] = Copy(e)
		}
		return m
	case []any:
		s := make([]any, len(x))
		for i, e := range x {
			s[i] = Copy(e)
		}
		return s
	}
	return v
}

// Compact is v as compact JSON on one line, without HTML escaping (< > &
// as they are); a value with no JSON form is formatted by fmt.
func Compact(v any) string {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return fmt.Sprint(v)
	}
	return strings.TrimSuffix(b.String(), "\n")
}

// Text is v as text: a string as it is, anything else as Compact JSON.
func Text(v any) string {
	if s, ok := v.(string); ok {
		return s
	}
	return Compact(v)
}

// FromYAML turns a value decoded from YAML into one JSON can carry: maps
// with non-string keys become maps with string keys (fmt's form of each
// key). It works in place where it can, and reports whether every number is
// finite (YAML has .inf and .nan, JSON has not).
func FromYAML(v any) (any, bool) {
	ok := true
	switch v := v.(type) {
	case float64:
		return v, !math.IsInf(v, 0) && !math.IsNaN(v)
	case map[string]any:
		for k, x := range v {
			var fine bool
			v[k], fine = FromYAML(x)
			ok = ok && fine
		}
	case map[any]any:
		m := make(map[string]any, len(v))
		for k, x := range v {
			var fine bool
			m[fmt.Sprint(k)], fine = FromYAML(x)
			ok = ok && fine
		}
		return m, ok
	case []any:
		for i, x := range v {
			var fine bool
			v[i], fine = FromYAML(x)
			ok = ok && fine
		}
	}
	return v, ok
}

// Valid reports, as an error, a value JSON cannot hold: a number that is
// NaN or infinite (an expression's division by zero), anywhere in v.
func Valid(v any) error {
	switch x := v.(type) {
	case float64:
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return fmt.Errorf("its value holds %v, which JSON cannot represent", x)
		}
	case map[string]any:
		for _, e := range x {
			if err := Valid(e); err != nil {
				return err
			}
		}
	case []any:
		for _, e := range x {
			if err := Valid(e); err != nil {
				return err
			}
		}
	}
	return nil
}
