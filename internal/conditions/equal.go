package conditions

import (
	"reflect"

	"github.com/expr-lang/expr/vm/runtime"
)

// Comparisons of values that may be lists or maps (==, != and in, whose
// operands are not known to be plain values when the condition compiles)
// are rewritten by the guard into equal and in: expr compares lists
// element by element with numbers by value (1 == 1.0), but maps with
// reflect.DeepEqual, under which the 1.0 of a JSON output is not the 1 of a
// literal. These compare lists and maps in depth, and numbers by value at
// every depth, as at the top. Each value compared costs one unit of work.

// equal is a == b, in depth.
func (m *meter) equal(a, b any) (bool, error) {
	if err := m.step(1); err != nil {
		return false, err
	}
	switch x := a.(type) {
	case []any:
		if y, ok := b.([]any); ok {
			if len(x) != len(y) {
				return false, nil
			}
			for i := range x {
				if eq, err := m.equal(x[i], y[i]); !eq || err != nil {
					return false, err
				}
			}
			return true, nil
		}
	case map[string]any:
		if y, ok := b.(map[string]any); ok {
			if len(x) != len(y) {
				return false, nil
			}
			for k, v := range x {
				w, ok := y[k]
				if !ok {
					return false, nil
				}
				if eq, err := m.equal(v, w); !eq || err != nil {
					return false, err
				}
			}
			return true, nil
		}
	}
	ra, rb := reflect.ValueOf(a), reflect.ValueOf(b)
	switch {
	case isList(ra) && isList(rb):
		if ra.Len() != rb.Len() {
			return false, nil
		}
		for i := 0; i < ra.Len(); i++ {
			if eq, err := m.equal(ra.Index(i).Interface(), rb.Index(i).Interface()); !eq || err != nil {
				return false, err
			}
		}
		return true, nil
	case stringMap(ra) && stringMap(rb):
		if ra.Len() != rb.Len() {
			return false, nil
		}
		keyType := rb.Type().Key()
		for iter := ra.MapRange(); iter.Next(); {
			w := rb.MapIndex(reflect.ValueOf(iter.Key().String()).Convert(keyType))
			if !w.IsValid() {
				return false, nil
			}
			if eq, err := m.equal(iter.Value().Interface(), w.Interface()); !eq || err != nil {
				return false, err
			}
		}
		return true, nil
	}
	return runtime.Equal(a, b), nil
}

// in is needle in haystack: for a list, whether an element is equal to
// needle in depth; otherwise expr's in (a key of a map).
func (m *meter) in(needle, haystack any) (bool, error) {
	switch h := haystack.(type) {
	case []any:
		for _, e := range h {
			if eq, err := m.equal(e, needle); eq || err != nil {
				return eq, err
			}
		}
		return false, nil
	}
	if rv := reflect.ValueOf(haystack); isList(rv) {
		for i := 0; i < rv.Len(); i++ {
			if eq, err := m.equal(rv.Index(i).Interface(), needle); eq || err != nil {
				return eq, err
			}
		}
		return false, nil
	}
	return runtime.In(needle, haystack), nil
}

func isList(v reflect.Value) bool {
	return v.Kind() == reflect.Slice || v.Kind() == reflect.Array
}

func stringMap(v reflect.Value) bool {
	return v.Kind() == reflect.Map && v.Type().Key().Kind() == reflect.String
}
