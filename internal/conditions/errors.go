package conditions

import (
	"cmp"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/expr-lang/expr/file"
)

// The errors of compiling and evaluating, in the documentation's words.

// CompileError is a condition that does not compile. Line and Column are
// 1-based and relative to the expression's source (Column counts characters);
// both are 0 when expr gave no position. Msg is one line.
type CompileError struct {
	Line   int
	Column int
	Msg    string
	What   string // "condition" (when empty) or "select"
}

func (e *CompileError) Error() string {
	what := cmp.Or(e.What, "condition")
	switch {
	case e.Line > 1:
		return fmt.Sprintf("%s (line %d, column %d of the %s)", e.Msg, e.Line, e.Column, what)
	case e.Column > 0:
		return fmt.Sprintf("%s (column %d of the %s)", e.Msg, e.Column, what)
	}
	return e.Msg
}

// RuntimeError is a condition that failed while evaluating. Column is 1-based
// (0 when unknown); Msg is one line. It unwraps to the underlying cause, so
// errors.Is(err, ErrMemoryBudget) works.
type RuntimeError struct {
	Column int
	Msg    string
	What   string // "condition" (when empty) or "select"
	cause  error
}

func (e *RuntimeError) Error() string {
	if e.Column > 0 {
		return fmt.Sprintf("%s (column %d of the %s)", e.Msg, e.Column, cmp.Or(e.What, "condition"))
	}
	return e.Msg
}

func (e *RuntimeError) Unwrap() error { return e.cause }

func compileError(err error) *CompileError {
	ce := &CompileError{Msg: oneLine(err.Error())}
	var fe *file.Error
	if errors.As(err, &fe) {
		ce.Msg = oneLine(fe.Message)
		if fe.Snippet != "" {
			ce.Line, ce.Column = fe.Line, fe.Column+1
		}
	}
	if ce.Msg == `unexpected token Operator("=")` {
		// a = b: the comparison is ==, assignment does not exist.
		ce.Msg += "; did you mean ==?"
	}
	if t, ok := strings.CutPrefix(ce.Msg, "expected bool, but got "); ok {
		ce.Msg = "condition must be boolean, but it is always " + typeWords(t)
	}
	if strings.Contains(ce.Msg, "exceeds maximum allowed nodes") {
		ce.Msg = fmt.Sprintf("condition is too large (more than %d syntax nodes)", MaxNodes)
	}
	if name, ok := strings.CutPrefix(ce.Msg, "unknown name "); ok && slices.Contains(Disabled, name) {
		ce.Msg = name + " is not available in conditions (no clock, environment or file access)"
	}
	if name, ok := strings.CutPrefix(ce.Msg, "unknown name "); ok && literalSpelling[name] != "" {
		ce.Msg += literalSpelling[name]
	}
	return ce
}

// literalSpelling is the hint for a literal spelt as in JSON, Python or
// JavaScript, which the expression language spells otherwise.
var literalSpelling = map[string]string{
	"null":      "; did you mean nil? (JSON's null is nil here)",
	"None":      "; did you mean nil?",
	"undefined": "; did you mean nil?",
	"True":      "; did you mean true?",
	"False":     "; did you mean false?",
}

// oneLine keeps the first line of a message, at most maxMessage bytes of it.
func oneLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = strings.TrimSpace(s[:i])
	}
	if len(s) > maxMessage {
		cut := maxMessage
		for cut > 0 && !utf8.RuneStart(s[cut]) {
			cut--
		}
		s = s[:cut] + "…"
	}
	return s
}

const maxMessage = 300

// position turns a rune offset into a 1-based line and column.
func position(src string, offset int) (line, col int) {
	line, col = 1, 1
	i := 0
	for _, r := range src {
		if i == offset {
			break
		}
		if r == '\n' {
			line, col = line+1, 1
		} else {
			col++
		}
		i++
	}
	return line, col
}

func typeName(v any) string {
	if v == nil {
		return "nil"
	}
	return reflect.TypeOf(v).String()
}

// typeWords names a Go type, as expr prints it, in the words of the
// documentation: a list, an object, a string, a number.
func typeWords(t string) string {
	switch {
	case t == "nil" || t == "unknown":
		return "nil"
	case strings.HasPrefix(t, "[]"):
		return "a list"
	case strings.HasPrefix(t, "map["):
		return "an object"
	case t == "string":
		return "a string"
	case t == "bool":
		return "a boolean"
	case strings.HasPrefix(t, "int") || strings.HasPrefix(t, "uint") || strings.HasPrefix(t, "float"):
		return "a number"
	}
	return t
}

// goTypes are the Go names of JSON values in expr's messages, and their
// names in the documentation.
var goTypes = strings.NewReplacer("map[string]interface {}", "object", "[]interface {}", "list", "float64", "number")

func runtimeError(err error, src string) *RuntimeError {
	var fe *file.Error
	if errors.As(err, &fe) {
		re := &RuntimeError{Msg: oneLine(fe.Message), cause: fe.Prev}
		if fe.Snippet != "" {
			re.Column = fe.Column + 1
		}
		if re.cause == nil && strings.Contains(re.Msg, ErrMemoryBudget.Error()) {
			re.cause = ErrMemoryBudget
		}
		// The cast of an untyped result to the boolean the condition must be.
		if t, ok := strings.CutPrefix(re.Msg, "invalid operation: bool("); ok && strings.HasSuffix(t, ")") && re.Column == 1 {
			re.Msg, re.Column = "condition must be boolean, but it returned "+typeWords(strings.TrimSuffix(t, ")")), 0
		}
		// A field of a string or a list: expr tries to make the name an index.
		if re.Msg == "invalid operation: int(string)" {
			if name := identifierAt(src, fe.Line, re.Column); name != "" {
				re.Msg = "cannot fetch " + name + " from a string or a list"
			}
		}
		if strings.HasPrefix(re.Msg, "cannot fetch ") && strings.HasSuffix(re.Msg, " from <nil>") {
			re.Msg = strings.TrimSuffix(re.Msg, "<nil>") + "nil (a missing value: write ?. and ?? where it may be missing)"
		}
		re.Msg = goTypes.Replace(re.Msg)
		return re
	}
	return &RuntimeError{Msg: oneLine(err.Error()), cause: err}
}

// identifierAt returns the identifier that starts at the 1-based line and
// character column of src, or "".
func identifierAt(src string, line, column int) string {
	lines := strings.Split(src, "\n")
	if line < 1 || line > len(lines) || column < 1 {
		return ""
	}
	runes := []rune(lines[line-1])
	end := column - 1
	for end < len(runes) && (runes[end] == '_' || unicode.IsLetter(runes[end]) || (end >= column && unicode.IsDigit(runes[end]))) {
		end++
	}
	if end <= column-1 {
		return ""
	}
	return string(runes[column-1 : end])
}
