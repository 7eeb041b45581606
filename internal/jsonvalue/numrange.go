package jsonvalue

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"
)

// NumberRangeError is a JSON number too large for the float64 that JSON
// numbers are read as (about ±1.8e308): valid JSON, which no value here
// can hold. Line and Column (1-based; the column counts characters) are
// where the number starts.
type NumberRangeError struct {
	Number       string // the number as written, cut when very long
	Offset       int64  // the byte offset of its start
	Line, Column int
}

func (e *NumberRangeError) Error() string {
	return fmt.Sprintf("the number %s at line %d, column %d is out of range: JSON numbers are read as 64-bit floats, which stop at about ±1.8e308",
		e.Number, e.Line, e.Column)
}

// maxNumberShown is how much of a number NumberRangeError quotes.
const maxNumberShown = 40

// RangeError is err, the error of decoding data with encoding/json into an
// any, as a *NumberRangeError when it is a number too large for a float64
// (encoding/json calls it a value it "cannot unmarshal"); nil otherwise.
func RangeError(data []byte, err error) *NumberRangeError {
	var te *json.UnmarshalTypeError
	if !errors.As(err, &te) || te.Type == nil || te.Type.Kind().String() != "float64" {
		return nil
	}
	num, ok := strings.CutPrefix(te.Value, "number ")
	if !ok {
		return nil
	}
	// Offset is just past the number, or past the token after it: the
	// number is its last occurrence before Offset (one inside a string
	// would come earlier).
	end := min(max(te.Offset, 0), int64(len(data)))
	start := int64(bytes.LastIndex(data[:end], []byte(num)))
	if start < 0 {
		start = end // not found: the best known place
	}
	if len(num) > maxNumberShown {
		num = num[:maxNumberShown-1] + "…"
	}
	e := &NumberRangeError{Number: num}
	e.locate(data, start)
	return e
}

// Within is e, found in a part of data that starts at byte at, placed in
// data: its offset, line and column are data's.
func (e *NumberRangeError) Within(data []byte, at int64) *NumberRangeError {
	c := *e
	c.locate(data, min(max(at+e.Offset, 0), int64(len(data))))
	return &c
}

func (e *NumberRangeError) locate(data []byte, start int64) {
	before := data[:start]
	e.Offset = start
	e.Line = 1 + bytes.Count(before, []byte("\n"))
	if nl := bytes.LastIndexByte(before, '\n'); nl >= 0 {
		before = before[nl+1:]
	}
	e.Column = utf8.RuneCount(before) + 1
}
