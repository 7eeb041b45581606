package ensemble

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"strings"
)

// Error is one problem found while loading a file.
type Error struct {
	File         string
	Line, Column int    // 1-based; 0 when unknown (the file could not be read)
	Message      string // a single line
	Source       string // the offending line of the file, when known; see Pretty
}

// Error formats e as FILE:LINE:COL: message (FILE: message when the line is
// unknown).
func (e *Error) Error() string {
	if e.Line == 0 {
		return e.File + ": " + e.Message
	}
	return fmt.Sprintf("%s:%d:%d: %s", e.File, e.Line, e.Column, e.Message)
}

// Pretty is Error followed, when the source line is known, by that line and a
// caret under the column.
func (e *Error) Pretty() string {
	if e.Source == "" {
		return e.Error()
	}
	gutter := fmt.Sprintf("%5d | ", e.Line)
	var caret strings.Builder
	for i, r := range []rune(e.Source) {
		if i >= e.Column-1 {
			break
		}
		if r == '\t' {
			caret.WriteRune('\t')
		} else {
			caret.WriteRune(' ')
		}
	}
	return fmt.Sprintf("%s\n%s%s\n%*s| %s^", e.Error(), gutter, e.Source, len(gutter)-2, "", caret.String())
}

// ErrorList is every problem found while loading, sorted by file, line and
// column. Load and friends return it as a *ErrorList.
type ErrorList []*Error

// Error joins the errors with newlines.
func (l ErrorList) Error() string { return l.join((*Error).Error) }

// Pretty joins the errors' Pretty forms with newlines.
func (l ErrorList) Pretty() string { return l.join((*Error).Pretty) }

func (l ErrorList) join(format func(*Error) string) string {
	lines := make([]string, len(l))
	for i, e := range l {
		lines[i] = format(e)
	}
	return strings.Join(lines, "\n")
}

// Sorted sorts l in place by file, line and column, and returns it without
// exact repeats (a node reached twice through YAML aliases reports its
// problems once).
func (l ErrorList) Sorted() ErrorList {
	slices.SortStableFunc(l, func(a, b *Error) int {
		return cmp.Or(cmp.Compare(a.File, b.File), cmp.Compare(a.Line, b.Line), cmp.Compare(a.Column, b.Column))
	})
	return slices.CompactFunc(l, func(a, b *Error) bool { return *a == *b })
}

// MaxErrors is how many errors one load reports; the others are counted in
// a last "…and N more errors".
const MaxErrors = 100

// errorSink collects the errors of one load: the first MaxErrors found, and
// how many more there were.
type errorSink struct {
	list ErrorList
	more int
	last string // the file of the last error, for the count of the others
}

func (s *errorSink) full() bool { return len(s.list) >= MaxErrors }

// add keeps e, or only counts it when MaxErrors are kept: it then returns
// false.
func (s *errorSink) add(e *Error) bool {
	s.last = e.File
	if s.full() {
		s.more++
		return false
	}
	s.list = append(s.list, e)
	return true
}

// result is nil when no error was found, else the sorted *ErrorList.
func (s *errorSink) result() error {
	if len(s.list) == 0 {
		return nil
	}
	l := s.list.Sorted()
	if s.more > 0 {
		l = append(l, &Error{File: s.last, Message: fmt.Sprintf("…and %d more errors", s.more)})
	}
	return &l
}

// Problem is one problem of a file, as `ensemble validate --output json`
// lists them (and an editor might). Line and Column are 1-based, 0 when
// unknown (a file that cannot be read).
type Problem struct {
	File     string `json:"file"`
	Line     int    `json:"line"`
	Column   int    `json:"column"`
	Severity string `json:"severity"` // "error" or "warning"
	Message  string `json:"message"`
}

// Problems are the problems of loading the file named name: the errors of
// err (an *ErrorList's each, or err itself), else the warnings of e, which
// are errors when strict.
func Problems(name string, e *Ensemble, err error, strict bool) []Problem {
	var out []Problem
	var list *ErrorList
	switch {
	case err == nil:
		severity := "warning"
		if strict {
			severity = "error"
		}
		for _, w := range e.Warnings {
			out = append(out, Problem{w.File, w.Line, w.Column, severity, w.Message})
		}
	case errors.As(err, &list):
		for _, x := range *list {
			out = append(out, Problem{x.File, x.Line, x.Column, "error", x.Message})
		}
	default:
		out = append(out, Problem{File: name, Severity: "error", Message: err.Error()})
	}
	return out
}
