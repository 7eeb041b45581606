package responses

import (
	"fmt"
	"strconv"
	"unicode/utf8"
	"unsafe"

	"github.com/ensemble-run/ensemble/ensemble"
)

// fastParse reads the common shape of a responses file without building a
// YAML node tree: agent names at the start of a line, each followed by a
// block list of one-line flow values ({k: v}, [..], "..", '..', numbers,
// true, false, null, simple plain words) or by a one-line flow list. It
// accepts only what it is sure the YAML parser reads the same way, and
// reports false for anything else (anchors, tags, block scalars, comments
// inside values, multi-line values, escapes it does not know, any error):
// the caller then parses the file with the YAML parser, which gives the
// same values and positioned errors. A test holds the two to the same
// result.
//
// An agent listed twice is reported here, as the YAML parser's reading
// would (the entries without problems are returned with the error), and
// past MaxResponseEntries the file is refused at the line over the cap.
func fastParse(name string, data []byte, lines *sourceLines, share bool) (*Responses, error, bool) {
	if !fastReadable(data) {
		return nil, nil, false
	}
	r := NewResponses()
	f := fastParser{data: data, share: share}
	var cur *ResponseEntry
	indent := -1 // of the current agent's items; -1 until the first
	line := 0
	entries := 0 // agents and responses read
	var errs []*ensemble.Error
	more := 0 // errors past MaxResponseErrors
	for pos := 0; pos < len(data); {
		line++
		end := pos
		for end < len(data) && data[end] != '\n' {
			end++
		}
		s := data[pos:end]
		next := end + 1
		i := 0
		for i < len(s) && s[i] == ' ' {
			i++
		}
		switch {
		case i == len(s) || s[i] == '#':
			// a blank line or a comment
		case i == 0 && s[0] != '-':
			// an agent name
			if cur != nil && cur.Values == nil {
				return nil, nil, false // an agent with nothing after it
			}
			j := plainWord(s, 0)
			if j == 0 || j >= len(s) || s[j] != ':' || special(string(s[:j])) {
				return nil, nil, false
			}
			if entries++; entries > MaxResponseEntries {
				return nil, tooManyEntries(name, line, lines), true
			}
			agent := string(s[:j])
			var dup *ensemble.Error
			if cur, dup = r.fastEntry(agent, name, line, lines); dup != nil {
				if len(errs) < MaxResponseErrors {
					errs = append(errs, dup)
				} else {
					more++
				}
			}
			indent = -1
			j++
			if j < len(s) {
				// agent: [flow list]
				list, found, ok := f.flowList(s, j)
				if !ok {
					return nil, nil, false
				}
				if found {
					cur.Values = list
					if entries += len(cur.Values); entries > MaxResponseEntries {
						return nil, tooManyEntries(name, line, lines), true
					}
					cur.Lines = make([]int32, len(cur.Values))
					for k := range cur.Lines {
						cur.Lines[k] = int32(line)
					}
					cur = nil
				}
			}
		default:
			// an item of the current agent's list: "- value"
			if cur == nil || s[i] != '-' || i+1 >= len(s) || s[i+1] != ' ' || (indent >= 0 && i != indent) {
				return nil, nil, false
			}
			if entries++; entries > MaxResponseEntries {
				return nil, tooManyEntries(name, line, lines), true
			}
			indent = i
			f.s, f.i = s, i+2
			f.spaces()
			v, ok := f.value(0)
			if !ok || !f.end() {
				return nil, nil, false
			}
			if cur.Values == nil {
				cur.Values = make([]any, 0, 8)
				cur.Lines = make([]int32, 0, 8)
			}
			cur.Values = append(cur.Values, v)
			cur.Lines = append(cur.Lines, int32(line))
		}
		pos = next
	}
	if cur != nil && cur.Values == nil {
		return nil, nil, false
	}
	return r, errorList(errs, more), true
}

// fastReadable is whether data has none of what the YAML reader refuses
// anywhere, comments included: control characters and invalid UTF-8 (tabs,
// CRs and a byte order mark are left to the YAML parser).
func fastReadable(data []byte) bool {
	for i := 0; i < len(data); {
		if b := data[i]; b < 0x80 {
			if b < 0x20 && b != '\n' || b == 0x7F {
				return false
			}
			i++
			continue
		}
		r, n := utf8.DecodeRune(data[i:])
		if r == utf8.RuneError || !printable(r) {
			return false
		}
		i += n
	}
	return true
}

// flowList reads what follows "agent:" at s[j:]: found is whether it is a
// flow list (not a comment or nothing), ok whether the line has the shape
// the fast reader knows.
func (f *fastParser) flowList(s []byte, j int) (list []any, found, ok bool) {
	if s[j] != ' ' {
		return nil, false, false
	}
	f.s, f.i = s, j
	f.spaces()
	if f.i >= len(f.s) || f.s[f.i] == '#' {
		return nil, false, true
	}
	if f.s[f.i] != '[' {
		return nil, false, false
	}
	v, ok := f.value(0)
	if !ok || !f.end() {
		return nil, false, false
	}
	return v.([]any), true, true
}

// fastParser reads one line's flow value.
type fastParser struct {
	data  []byte
	s     []byte
	i     int
	share bool // strings may share data's bytes
}

// str is b as a string: sharing b's bytes when the parser may.
func (f *fastParser) str(b []byte) string {
	if f.share && len(b) > 0 {
		return unsafe.String(&b[0], len(b))
	}
	return string(b)
}

func (f *fastParser) spaces() {
	for f.i < len(f.s) && f.s[f.i] == ' ' {
		f.i++
	}
}

// end reports whether only spaces, or spaces and a comment, follow.
func (f *fastParser) end() bool {
	start := f.i
	f.spaces()
	return f.i == len(f.s) || f.s[f.i] == '#' && f.i > start
}

// special words are plain scalars that are not strings, or that this
// parser leaves to the YAML parser.
func special(w string) bool {
	switch w {
	case "null", "Null", "NULL", "true", "True", "TRUE", "false", "False", "FALSE":
		return true
	}
	return false
}

// plainWord returns the end of a simple plain word starting at i: a letter
// or '_', then letters, digits, '_' and '-'; i when there is none.
func plainWord(s []byte, i int) int {
	if i >= len(s) || !(s[i] >= 'a' && s[i] <= 'z' || s[i] >= 'A' && s[i] <= 'Z' || s[i] == '_') {
		return i
	}
	j := i + 1
	for j < len(s) && (s[j] >= 'a' && s[j] <= 'z' || s[j] >= 'A' && s[j] <= 'Z' || s[j] >= '0' && s[j] <= '9' || s[j] == '_' || s[j] == '-') {
		j++
	}
	return j
}

func isDigit(b byte) bool { return b >= '0' && b <= '9' }

func (f *fastParser) value(depth int) (any, bool) {
	if depth > 100 || f.i >= len(f.s) {
		return nil, false
	}
	switch c := f.s[f.i]; {
	case c == '{':
		return f.flowMapping(depth)
	case c == '[':
		return f.flowSequence(depth)
	case c == '"':
		return f.double()
	case c == '\'':
		return f.single()
	case c == '-' || isDigit(c):
		return f.number()
	default:
		return f.plain()
	}
}

// flowMapping reads a flow mapping, {key: value, ...}, from its {.
func (f *fastParser) flowMapping(depth int) (any, bool) {
	f.i++
	out := map[string]any{}
	f.spaces()
	if f.i < len(f.s) && f.s[f.i] == '}' {
		f.i++
		return out, true
	}
	for {
		var key string
		if f.i < len(f.s) && f.s[f.i] == '"' {
			k, ok := f.double()
			if !ok {
				return nil, false
			}
			key = k
		} else {
			j := plainWord(f.s, f.i)
			if j == f.i || special(string(f.s[f.i:j])) {
				return nil, false
			}
			key, f.i = string(f.s[f.i:j]), j
		}
		if f.i+1 >= len(f.s) || f.s[f.i] != ':' || f.s[f.i+1] != ' ' {
			return nil, false
		}
		f.i += 2
		f.spaces()
		if _, dup := out[key]; dup {
			return nil, false
		}
		v, ok := f.value(depth + 1)
		if !ok {
			return nil, false
		}
		out[key] = v
		if end, ok := f.after('}'); !ok {
			return nil, false
		} else if end {
			return out, true
		}
	}
}

// flowSequence reads a flow sequence, [value, ...], from its [.
func (f *fastParser) flowSequence(depth int) (any, bool) {
	f.i++
	out := []any{}
	f.spaces()
	if f.i < len(f.s) && f.s[f.i] == ']' {
		f.i++
		return out, true
	}
	for {
		v, ok := f.value(depth + 1)
		if !ok {
			return nil, false
		}
		out = append(out, v)
		if end, ok := f.after(']'); !ok {
			return nil, false
		} else if end {
			return out, true
		}
	}
}

// plain reads a plain scalar: words separated by single spaces ("go",
// "hello world"), or true, false and null.
func (f *fastParser) plain() (any, bool) {
	// plain words separated by single spaces: "go", "hello world"
	j := plainWord(f.s, f.i)
	if j == f.i {
		return nil, false
	}
	for j+1 < len(f.s) && f.s[j] == ' ' {
		k := plainWord(f.s, j+1)
		if k == j+1 {
			break
		}
		j = k
	}
	w := f.str(f.s[f.i:j])
	if special(w) {
		switch w {
		case "true":
			f.i = j
			return true, true
		case "false":
			f.i = j
			return false, true
		case "null":
			f.i = j
			return nil, true
		}
		return nil, false
	}
	// What follows must end the scalar: a plain scalar runs on over
	// other characters.
	if j < len(f.s) && f.s[j] != ',' && f.s[j] != ']' && f.s[j] != '}' && f.s[j] != ' ' {
		return nil, false
	}
	f.i = j
	return w, true
}

// fastEntry starts the entry of an agent at line; an agent listed twice
// gets an entry that is read, to be sure of the file's shape, but not kept,
// and the error.
func (r *Responses) fastEntry(agent, name string, line int, lines *sourceLines) (*ResponseEntry, *ensemble.Error) {
	if first, dup := r.entries[agent]; dup {
		return &ResponseEntry{Agent: agent}, &ensemble.Error{File: name, Line: line, Column: 1, Source: sourceLine(lines, line),
			Message: fmt.Sprintf("agent %q is listed twice (first at line %d)", agent, first.Pos.Line)}
	}
	cur := &ResponseEntry{Agent: agent, File: name, Pos: ensemble.Pos{Line: line, Column: 1}, src: sourceLine(lines, line)}
	r.entries[agent] = cur
	r.order = append(r.order, agent)
	return cur, nil
}

// number reads -?(0|[1-9][0-9]*)(\.[0-9]+)? of at most 15 digits, which
// the YAML parser reads as an int or a float of the same float64 value.
func (f *fastParser) number() (any, bool) {
	s, i := f.s, f.i
	neg := s[i] == '-'
	if neg {
		i++
	}
	start := i
	if i >= len(s) || !isDigit(s[i]) {
		return nil, false
	}
	if s[i] == '0' {
		i++
	} else {
		for i < len(s) && isDigit(s[i]) {
			i++
		}
	}
	digits := i - start
	isFloat := false
	if i < len(s) && s[i] == '.' {
		i++
		fs := i
		for i < len(s) && isDigit(s[i]) {
			i++
		}
		if i == fs {
			return nil, false
		}
		digits += i - fs
		isFloat = true
	}
	if digits > 15 {
		return nil, false
	}
	if i < len(s) && s[i] != ',' && s[i] != ']' && s[i] != '}' && s[i] != ' ' {
		return nil, false
	}
	text := string(s[f.i:i])
	f.i = i
	if !isFloat {
		n, err := strconv.ParseInt(text, 10, 64)
		if err != nil {
			return nil, false
		}
		return float64(n), true // "-0" is the int 0
	}
	x, err := strconv.ParseFloat(text, 64)
	if err != nil {
		return nil, false
	}
	return x, true
}

// printable reports whether r may appear in a YAML file, and is not one of
// the line breaks beyond \n (NEL, LS, PS), which this parser leaves to the
// YAML parser.
func printable(r rune) bool {
	return r >= 0x20 && r <= 0x7E || r >= 0xA0 && r <= 0xD7FF && r != 0x2028 && r != 0x2029 ||
		r >= 0xE000 && r <= 0xFFFD && r != 0xFEFF || r >= 0x10000 && r <= 0x10FFFF
}

// double reads a double-quoted string on one line with the escapes
// \" \\ \n \t \r \b \f and \uXXXX outside the surrogates.
func (f *fastParser) double() (string, bool) {
	s := f.s
	i := f.i + 1
	start := i
	plain := true
	for ; i < len(s) && s[i] != '"'; i++ {
		if s[i] == '\\' {
			plain = false
			i++
		}
	}
	if i >= len(s) {
		return "", false
	}
	body := s[start:i]
	f.i = i + 1
	if plain {
		return f.str(body), true
	}
	out := make([]byte, 0, len(body))
	for j := 0; j < len(body); j++ {
		c := body[j]
		if c != '\\' {
			out = append(out, c)
			continue
		}
		j++
		switch body[j] {
		case '"', '\\':
			out = append(out, body[j])
		case 'n':
			out = append(out, '\n')
		case 't':
			out = append(out, '\t')
		case 'r':
			out = append(out, '\r')
		case 'b':
			out = append(out, '\b')
		case 'f':
			out = append(out, '\f')
		case 'u':
			if j+5 > len(body) {
				return "", false
			}
			n, err := strconv.ParseUint(string(body[j+1:j+5]), 16, 32)
			if err != nil || n >= 0xD800 && n <= 0xDFFF {
				return "", false
			}
			out = utf8.AppendRune(out, rune(n))
			j += 4
		default:
			return "", false
		}
	}
	return string(out), true
}

// single reads a single-quoted string on one line, where a doubled quote
// is a quote.
func (f *fastParser) single() (string, bool) {
	s := f.s
	var out []byte
	i := f.i + 1
	for {
		if i >= len(s) {
			return "", false
		}
		if s[i] == '\'' {
			if i+1 < len(s) && s[i+1] == '\'' {
				out = append(out, '\'')
				i += 2
				continue
			}
			break
		}
		out = append(out, s[i])
		i++
	}
	f.i = i + 1
	return string(out), true
}

// after reads what follows an element of a flow mapping or sequence: its
// closing bracket (end), or a comma and the spaces after it; anything else
// is not ok.
func (f *fastParser) after(closing byte) (end, ok bool) {
	f.spaces()
	switch {
	case f.i >= len(f.s):
		return false, false
	case f.s[f.i] == closing:
		f.i++
		return true, true
	case f.s[f.i] != ',':
		return false, false
	}
	f.i++
	f.spaces()
	return false, true
}
