package ensemble

import (
	"fmt"
	"regexp"
	"strings"
	"unicode/utf8"
)

var (
	// yamlLine is the line yaml gives some errors; it is not reliable
	// (0-based for parser errors, 1-based for scanner errors), see
	// failingLine.
	yamlLine      = regexp.MustCompile(`^line \d+: `)
	unknownAnchor = regexp.MustCompile(`^unknown anchor '(.*)' referenced$`)
)

// syntaxError turns a yaml syntax error detected on line (1-based) of lines
// into plain words, at the line and column of its cause.
func syntaxError(lines []string, line int, err error) (int, int, string) {
	raw := strings.ReplaceAll(yamlLine.ReplaceAllString(strings.TrimPrefix(err.Error(), "yaml: "), ""), "\n", " ")
	text := sourceLine(lines, line)
	indent := len(text) - len(strings.TrimLeft(text, " \t"))
	first := column(text, indent) // of the line's first character
	switch {
	case strings.HasPrefix(raw, "found character that cannot start any token"),
		strings.HasPrefix(raw, "found a tab character"):
		if i := strings.IndexByte(text[:indent], '\t'); i >= 0 {
			return line, column(text, i), "tab character used for indentation; YAML needs spaces"
		}
		if i := strings.IndexAny(text[indent:], "@`"); i >= 0 {
			return line, column(text, indent+i), fmt.Sprintf("%q cannot start a value: put the value in quotes", text[indent+i])
		}
	case strings.HasPrefix(raw, "did not find expected '-' indicator"):
		return line, first, "bad indentation: this line does not line up with the list items above it"
	case strings.HasPrefix(raw, "did not find expected key"):
		return line, first, "bad indentation: this line does not line up with the keys above it"
	case strings.HasPrefix(raw, "mapping values are not allowed"):
		if i := valueColon(text, indent); i >= 0 {
			return line, column(text, i), `a value cannot contain ": " unless it is quoted: put the value in quotes`
		}
		if indent > contentIndent(lines, line) {
			return line, first, "bad indentation: this line is indented more than the line above it, which already has a value"
		}
	case strings.HasPrefix(raw, "did not find expected ',' or ']'"):
		return unclosed(lines, line, "list", "[", "]")
	case strings.HasPrefix(raw, "did not find expected ',' or '}'"):
		return unclosed(lines, line, "mapping", "{", "}")
	case strings.HasPrefix(raw, "found unexpected end of stream"):
		if i := strings.IndexAny(text, `"'`); i >= 0 {
			return line, column(text, i), "this quoted string is never closed"
		}
	case unknownAnchor.MatchString(raw):
		name := unknownAnchor.FindStringSubmatch(raw)[1]
		if i := strings.Index(text, "*"+name); i >= 0 {
			return line, column(text, i), fmt.Sprintf("*%s refers to no anchor: define &%s before it", name, name)
		}
	}
	return line, first, "YAML syntax error: " + raw
}

// sourceLine is line n (1-based) of lines without its line ending, or "".
func sourceLine(lines []string, n int) string {
	if n < 1 || n > len(lines) {
		return ""
	}
	return strings.TrimRight(lines[n-1], "\r")
}

// column is the 1-based column, in characters, of byte i of text.
func column(text string, i int) int { return utf8.RuneCountInString(text[:i]) + 1 }

// contentIndent is where the content of the last line before line starts
// that holds something: its indentation, "- " list markers included.
func contentIndent(lines []string, line int) int {
	for l := line - 1; l >= 1; l-- {
		text := sourceLine(lines, l)
		trimmed := strings.TrimLeft(text, " -")
		if trimmed != "" && !strings.HasPrefix(trimmed, "#") {
			return len(text) - len(trimmed)
		}
	}
	return 0
}

// valueColon finds, in a "key: value" line whose content starts at byte
// indent, the ": " of the value (or a ":" ending it); -1 when none.
func valueColon(text string, indent int) int {
	rest := strings.TrimLeft(text[indent:], "- ")
	start := len(text) - len(rest)
	key := strings.Index(rest, ": ")
	if key < 0 {
		return -1
	}
	value := rest[key+2:]
	for i := range len(value) {
		if value[i] == ':' && (i+1 == len(value) || value[i+1] == ' ') {
			return start + key + 2 + i
		}
	}
	return -1
}

// unclosed reports a flow list or mapping that is not closed: at the last
// opening bracket on line or above it.
func unclosed(lines []string, line int, what, open, close string) (int, int, string) {
	for l := min(line, len(lines)); l >= 1; l-- {
		if i := strings.LastIndex(lines[l-1], open); i >= 0 {
			return l, column(lines[l-1], i), fmt.Sprintf("this %s is not closed: %q is missing", what, close)
		}
	}
	return line, 1, fmt.Sprintf("a %s is not closed: %q is missing", what, close)
}
