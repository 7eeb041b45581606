package report

import (
	"fmt"
	"io"
	"strings"
	"unicode/utf8"
)

// TerminalSafe is s with what a terminal would act on made visible: C0
// control characters other than newline and tab (ESC among them), DEL, C1
// control characters and bytes that are not UTF-8 (a lone 0x9b is CSI to
// some terminals) are written as \x1b, \u009b. Values in the text output
// come from models, scripts and files: none of them may move the cursor,
// recolour the screen or set the window title.
func TerminalSafe(s string) string {
	i := 0
	for i < len(s) {
		r, n := utf8.DecodeRuneInString(s[i:])
		if unsafeRune(r, n) {
			break
		}
		i += n
	}
	if i == len(s) {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 8)
	b.WriteString(s[:i])
	for i < len(s) {
		r, n := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && n == 1:
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case r < 0x80 && unsafeRune(r, n):
			fmt.Fprintf(&b, `\x%02x`, r)
		case unsafeRune(r, n):
			fmt.Fprintf(&b, `\u%04x`, r)
		default:
			b.WriteString(s[i : i+n])
		}
		i += n
	}
	return b.String()
}

func unsafeRune(r rune, n int) bool {
	switch {
	case r == utf8.RuneError && n == 1:
		return true
	case r == '\n' || r == '\t':
		return false
	}
	return r < 0x20 || r == 0x7f || r >= 0x80 && r <= 0x9f
}

// terminalWriter writes through TerminalSafe: the human text output, whose
// every write is whole lines or runs of them (fmt.Fprint*).
type terminalWriter struct{ w io.Writer }

// TerminalWriter is w with every write made TerminalSafe.
func TerminalWriter(w io.Writer) io.Writer {
	if _, ok := w.(terminalWriter); ok {
		return w
	}
	return terminalWriter{w}
}

func (t terminalWriter) Write(p []byte) (int, error) {
	s := string(p)
	safe := TerminalSafe(s)
	if safe == s {
		return t.w.Write(p)
	}
	if _, err := io.WriteString(t.w, safe); err != nil {
		return 0, err
	}
	return len(p), nil
}
