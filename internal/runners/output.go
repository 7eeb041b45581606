package runners

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/ensemble-run/ensemble/internal/jsonvalue"
)

// MaxOutputDepth is how deeply an output's arrays and objects may nest.
// Deeper outputs fail their execution: the state and the result could not be
// written (their indentation grows with the square of the depth, and
// encoding/json stops at 10,000 levels).
const MaxOutputDepth = 512

// ErrTooDeep is the error of an output that nests deeper than MaxOutputDepth.
var ErrTooDeep = fmt.Errorf("output nests deeper than %d levels", MaxOutputDepth)

// decodeOutput decodes the JSON value b as an output. Its nesting is checked
// first, in one pass over b: valid JSON that nests deeper than MaxOutputDepth
// is ErrTooDeep; a number too large for a float64 is a
// *jsonvalue.NumberRangeError; invalid JSON is json.Unmarshal's error.
func decodeOutput(b []byte) (any, error) {
	if jsonDepth(b) > MaxOutputDepth && json.Valid(b) {
		return nil, ErrTooDeep
	}
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		if re := jsonvalue.RangeError(b, err); re != nil {
			return nil, re // valid JSON, with a number no float64 holds
		}
		return nil, err
	}
	return v, nil
}

// jsonDepth is the deepest nesting of arrays and objects in the JSON text b
// (an estimate when b is not valid JSON).
func jsonDepth(b []byte) int {
	depth, deepest := 0, 0
	inString, escaped := false, false
	for _, c := range b {
		switch {
		case escaped:
			escaped = false
		case inString:
			switch c {
			case '\\':
				escaped = true
			case '"':
				inString = false
			}
		case c == '"':
			inString = true
		case c == '[' || c == '{':
			depth++
			deepest = max(deepest, depth)
		case c == ']' || c == '}':
			depth--
		}
	}
	return deepest
}

// ValueDepth is the nesting of v's lists and maps ([] is 1), counted up to
// MaxOutputDepth+1.
func ValueDepth(v any) int { return depthUnder(v, 0) }

// depthUnder is ValueDepth of v at nesting outer, walking lists and maps in
// place (an injected response is checked at every execution).
func depthUnder(v any, outer int) int {
	depth := outer + 1
	if depth > MaxOutputDepth {
		switch v.(type) {
		case []any, map[string]any:
			return depth
		}
		return outer
	}
	deepest := outer
	switch x := v.(type) {
	case []any:
		deepest = depth
		for _, e := range x {
			deepest = max(deepest, depthUnder(e, depth))
		}
	case map[string]any:
		deepest = depth
		for _, e := range x {
			deepest = max(deepest, depthUnder(e, depth))
		}
	}
	return deepest
}

// ParseJSONReply parses a reply that must be JSON (output_format: json,
// docs/llm.md#messages-and-memory): the whole reply, trimmed, or else the first fenced code block in it
// — ```json preferred, then any ``` block — so "Here it is:\n```json\n{...}\n```"
// is accepted.
//
// A reply that is JSON but holds a number too large for a float64 says so,
// with the number's line and column in the reply: it is not invalid JSON.
func ParseJSONReply(text string) (any, error) {
	trimmed := strings.TrimSpace(text)
	v, err := decodeOutput([]byte(trimmed))
	if err == nil || errors.Is(err, ErrTooDeep) {
		return v, err
	}
	var outOfRange *jsonvalue.NumberRangeError
	errors.As(err, &outOfRange)
	at := int64(strings.Index(text, trimmed)) // where the JSON starts in the reply
	for _, body := range fencedBlocks(trimmed) {
		fv, ferr := decodeOutput([]byte(body))
		if ferr == nil || errors.Is(ferr, ErrTooDeep) {
			return fv, ferr
		}
		err = ferr
		if re, ok := errors.AsType[*jsonvalue.NumberRangeError](ferr); ok && outOfRange == nil {
			outOfRange, at = re, int64(strings.Index(text, body))
		}
	}
	if trimmed == "" {
		return nil, errors.New("the reply is empty, not JSON")
	}
	if outOfRange != nil {
		return nil, fmt.Errorf("the reply is JSON, but %w", outOfRange.Within([]byte(text), at))
	}
	return nil, fmt.Errorf("the reply is not valid JSON: %v", err)
}

// fencedBlocks returns the bodies of the ``` blocks in text, the ones tagged
// json first. A block may be on one line ("```json {...}```"), and the last
// may be unterminated (a truncated reply).
func fencedBlocks(text string) []string {
	var tagged, other []string
	rest := text
	for {
		start := strings.Index(rest, "```")
		if start < 0 {
			break
		}
		rest = rest[start+3:]
		var inner string
		if end := strings.Index(rest, "```"); end >= 0 {
			inner, rest = rest[:end], rest[end+3:]
		} else {
			inner, rest = rest, ""
		}
		info := ""
		if nl := strings.IndexByte(inner, '\n'); nl >= 0 && !strings.ContainsAny(inner[:nl], "{[\"") {
			info, inner = strings.TrimSpace(inner[:nl]), inner[nl+1:]
		} else if len(inner) >= 4 && strings.EqualFold(inner[:4], "json") &&
			(len(inner) == 4 || strings.ContainsRune(" \t{[", rune(inner[4]))) {
			info, inner = "json", inner[4:]
		}
		b := strings.TrimSpace(inner)
		if strings.EqualFold(info, "json") {
			tagged = append(tagged, b)
		} else {
			other = append(other, b)
		}
		if rest == "" {
			break
		}
	}
	return append(tagged, other...)
}
