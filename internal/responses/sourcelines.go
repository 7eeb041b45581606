package responses

import (
	"bytes"
	"fmt"
	"slices"
	"strings"

	"github.com/ensemble-run/ensemble/ensemble"
)

// errorList returns errs sorted by position as a *ensemble.ErrorList (the
// loader's error type), or nil: the first MaxResponseErrors, then a count of
// the others and of more (errors found but not kept).
func errorList(errs []*ensemble.Error, more ...int) error {
	if len(errs) == 0 {
		return nil
	}
	l := ensemble.ErrorList(slices.Clone(errs)).Sorted()
	n := 0
	for _, m := range more {
		n += m
	}
	if len(l) > MaxResponseErrors {
		n += len(l) - MaxResponseErrors
		l = l[:MaxResponseErrors]
	}
	if n > 0 {
		l = append(l, &ensemble.Error{File: l[len(l)-1].File, Column: moreColumn, Message: fmt.Sprintf("…and %d more errors", n)})
	}
	return &l
}

// moreColumn marks the last entry of an errorList that counts the errors
// left out (its Line is 0: it prints as FILE: message).
const moreColumn = -1

// splitMore is l without its count of the errors left out, and that count.
func splitMore(l ensemble.ErrorList) (ensemble.ErrorList, int) {
	if n := len(l); n > 0 && l[n-1].Line == 0 && l[n-1].Column == moreColumn {
		var more int
		fmt.Sscanf(l[n-1].Message, "…and %d more errors", &more)
		return l[:n-1], more
	}
	return l, 0
}

// tooManyEntries is the error of a responses file past MaxResponseEntries,
// at the line of the first entry over the cap.
func tooManyEntries(file string, line int, lines *sourceLines) error {
	return &ensemble.ErrorList{{File: file, Line: line, Column: 1, Source: sourceLine(lines, line),
		Message: fmt.Sprintf("more than %d entries (agents and responses): the most a responses file may hold", MaxResponseEntries)}}
}

// countEntryLines is how many lines of data start an entry in block style:
// a line starting at its first column (an agent) or a line whose first
// other than spaces is "- " (a response). It stops, returning the line, at
// the first over MaxResponseEntries: the YAML parser's tree takes many
// times the size of a file of tiny entries, so such a file is refused
// before it is built.
func countEntryLines(data []byte) (over int) {
	n, line := 0, 0
	for pos := 0; pos < len(data); {
		line++
		end := bytes.IndexByte(data[pos:], '\n')
		if end < 0 {
			end = len(data)
		} else {
			end += pos
		}
		s := data[pos:end]
		i := 0
		for i < len(s) && s[i] == ' ' {
			i++
		}
		switch {
		case i == len(s) || s[i] == '#' || s[i] == '\r':
		case i == 0 && s[0] != '-' || s[i] == '-' && (i+1 == len(s) || s[i+1] == ' '):
			if n++; n > MaxResponseEntries {
				return line
			}
		}
		pos = end + 1
	}
	return 0
}

// sourceLines finds the lines of a file's contents for error messages,
// without copying the contents: a large responses file is not held twice.
// It keeps where every linesPerMark-th line starts, not every line: a file
// of short lines near its 1 GiB cap would otherwise take an offset of 8
// bytes per line, more than its own size.
type sourceLines struct {
	data  []byte
	marks []int // offset of lines 1, 1+linesPerMark, 1+2×linesPerMark…
	count int   // the lines
}

// linesPerMark is how many lines apart sourceLines marks their start: a
// line is found by reading at most that many from a mark.
const linesPerMark = 256

func newSourceLines(data []byte) *sourceLines {
	l := &sourceLines{data: data, marks: []int{0}, count: 1}
	for i := 0; ; {
		j := bytes.IndexByte(data[i:], '\n')
		if j < 0 {
			break
		}
		i += j + 1
		if l.count%linesPerMark == 0 {
			l.marks = append(l.marks, i)
		}
		l.count++
	}
	return l
}

// sourceLine is line n (1-based) of lines, or "": a copy, so that it does
// not keep the whole file in memory.
func sourceLine(lines *sourceLines, n int) string {
	if n < 1 || n > lines.count {
		return ""
	}
	rest := lines.data[lines.marks[(n-1)/linesPerMark]:]
	for k := (n - 1) % linesPerMark; k > 0; k-- {
		rest = rest[bytes.IndexByte(rest, '\n')+1:]
	}
	if j := bytes.IndexByte(rest, '\n'); j >= 0 {
		rest = rest[:j]
	}
	return strings.TrimRight(string(rest), "\r")
}
