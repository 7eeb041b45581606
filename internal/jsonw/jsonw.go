// Package jsonw writes indented JSON fast: the bytes json.MarshalIndent
// writes, for the values decoded JSON is made of (map[string]any, []any,
// string, float64, bool, nil, and int), without reflection or a second
// indenting pass. Any other value is handed to encoding/json. Printing a long
// run's result is mostly such values (docs/performance.md).
package jsonw

import (
	"bytes"
	"encoding/json"
	"math"
	"slices"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"
)

// AppendIndent appends v to dst as json.MarshalIndent(v, prefix, indent)
// writes it, for a value that begins at nesting depth depth (its inner lines
// are indented depth+1 times after prefix). With an empty prefix and indent
// it writes v compact, as json.Marshal does (where MarshalIndent would still
// break its lines): see Compact.
func AppendIndent(dst []byte, v any, prefix, indent string, depth int) ([]byte, error) {
	switch x := v.(type) {
	case nil:
		return append(dst, "null"...), nil
	case string:
		return AppendString(dst, x), nil
	case bool:
		return strconv.AppendBool(dst, x), nil
	case float64:
		return appendFloat(dst, x)
	case int:
		return strconv.AppendInt(dst, int64(x), 10), nil
	case map[string]any:
		return appendObject(dst, x, prefix, indent, depth)
	case []any:
		if x == nil {
			return append(dst, "null"...), nil
		}
		if len(x) == 0 {
			return append(dst, "[]"...), nil
		}
		dst = append(dst, '[')
		var err error
		for i, e := range x {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = Newline(dst, prefix, indent, depth+1)
			if dst, err = AppendIndent(dst, e, prefix, indent, depth+1); err != nil {
				return dst, err
			}
		}
		return append(Newline(dst, prefix, indent, depth), ']'), nil
	}
	b, err := json.Marshal(v)
	if err != nil || Compact(prefix, indent) {
		return append(dst, b...), err
	}
	var buf bytes.Buffer
	inner := prefix
	for range depth {
		inner += indent
	}
	if err := json.Indent(&buf, b, inner, indent); err != nil {
		return dst, err
	}
	return append(dst, buf.Bytes()...), nil
}

// appendObject is AppendIndent of an object: its keys sorted, as
// encoding/json writes them.
func appendObject(dst []byte, x map[string]any, prefix, indent string, depth int) ([]byte, error) {
	if x == nil {
		return append(dst, "null"...), nil
	}
	if len(x) == 0 {
		return append(dst, "{}"...), nil
	}
	// The entries sorted by key, in a buffer on the stack for most
	// objects: no allocation, and no second lookup of each value.
	var small [16]entry
	entries := small[:0]
	var borrowed *[]entry
	if len(x) > len(small) {
		// A larger object borrows a buffer: printing many of them
		// (a DAG's dependencies) leaves no garbage behind.
		borrowed = entryPool.Get().(*[]entry)
		if cap(*borrowed) < len(x) {
			*borrowed = make([]entry, 0, len(x))
		}
		entries = (*borrowed)[:0]
	}
	for k, v := range x {
		entries = append(entries, entry{k, v})
	}
	if len(entries) <= len(small) {
		// An insertion sort: most objects have a handful of keys,
		// for which it beats a general sort and its comparison calls.
		for i := 1; i < len(entries); i++ {
			for j := i; j > 0 && entries[j].k < entries[j-1].k; j-- {
				entries[j], entries[j-1] = entries[j-1], entries[j]
			}
		}
	} else {
		slices.SortFunc(entries, func(a, b entry) int { return strings.Compare(a.k, b.k) })
	}
	dst = append(dst, '{')
	var err error
	for i, e := range entries {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = Newline(dst, prefix, indent, depth+1)
		dst = AppendString(dst, e.k)
		dst = append(dst, ':')
		if !Compact(prefix, indent) {
			dst = append(dst, ' ')
		}
		if dst, err = AppendIndent(dst, e.v, prefix, indent, depth+1); err != nil {
			break
		}
	}
	if borrowed != nil {
		clear(entries) // the pool keeps no values alive
		entryPool.Put(borrowed)
	}
	if err != nil {
		return dst, err
	}
	return append(Newline(dst, prefix, indent, depth), '}'), nil
}

type entry struct {
	k string
	v any
}

var entryPool = sync.Pool{New: func() any { return new([]entry) }}

// Compact reports whether prefix and indent ask for compact JSON: both
// empty.
func Compact(prefix, indent string) bool { return prefix == "" && indent == "" }

// Newline breaks the line and indents it: prefix, then indent depth times;
// nothing when compact (see Compact).
func Newline(dst []byte, prefix, indent string, depth int) []byte {
	if Compact(prefix, indent) {
		return dst
	}
	dst = append(dst, '\n')
	dst = append(dst, prefix...)
	for range depth {
		dst = append(dst, indent...)
	}
	return dst
}

// appendFloat writes f as encoding/json does (ES6 number formatting).
func appendFloat(dst []byte, f float64) ([]byte, error) {
	if math.IsInf(f, 0) || math.IsNaN(f) {
		_, err := json.Marshal(f) // the same error encoding/json gives
		return dst, err
	}
	format := byte('f')
	if abs := math.Abs(f); abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		format = 'e'
	}
	dst = strconv.AppendFloat(dst, f, format, -1, 64)
	if format == 'e' {
		// e-09 → e-9
		if n := len(dst); n >= 4 && dst[n-4] == 'e' && dst[n-3] == '-' && dst[n-2] == '0' {
			dst[n-2] = dst[n-1]
			dst = dst[:n-1]
		}
	}
	return dst, nil
}

const hex = "0123456789abcdef"

// plain[b] is whether the ASCII byte b is written as it is in a string:
// not a control character, a quote, a backslash or an HTML character.
var plain = func() (t [utf8.RuneSelf]bool) {
	for b := range t {
		t[b] = b >= 0x20 && b != '"' && b != '\\' && b != '<' && b != '>' && b != '&'
	}
	return t
}()

// AppendString appends s quoted as encoding/json does, HTML characters
// escaped.
func AppendString(dst []byte, s string) []byte {
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); {
		if b := s[i]; b < utf8.RuneSelf {
			if plain[b] {
				i++
				continue
			}
			dst = append(dst, s[start:i]...)
			switch b {
			case '\\', '"':
				dst = append(dst, '\\', b)
			case '\b':
				dst = append(dst, '\\', 'b')
			case '\f':
				dst = append(dst, '\\', 'f')
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			default:
				dst = append(dst, '\\', 'u', '0', '0', hex[b>>4], hex[b&0xF])
			}
			i++
			start = i
			continue
		}
		c, size := utf8.DecodeRuneInString(s[i:])
		if c == utf8.RuneError && size == 1 {
			dst = append(dst, s[start:i]...)
			dst = append(dst, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if c == '\u2028' || c == '\u2029' {
			dst = append(dst, s[start:i]...)
			dst = append(dst, '\\', 'u', '2', '0', '2', hex[c&0xF])
			i += size
			start = i
			continue
		}
		i += size
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}
