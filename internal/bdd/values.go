package bdd

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"strings"

	"github.com/cucumber/godog"
	"go.yaml.in/yaml/v3"

	"github.com/ensemble-run/ensemble/internal/jsonvalue"
)

// docValue reads a doc string as a value.
//
// The doc string's media type decides: json (must be JSON), yaml or yml
// (must be YAML), text, txt, plain, markdown or md (the text as it is).
// Without one, content that starts with { or [ must be JSON; anything else
// is text when textOK, and JSON otherwise.
//
// isText reports that the value is text (a string to use as reply text).
func docValue(ds *godog.DocString, textOK bool) (v any, isText bool, err error) {
	if ds == nil {
		return nil, false, errors.New("this step needs a doc string (a block between \"\"\" lines) below it")
	}
	content := ds.Content
	switch strings.ToLower(strings.TrimSpace(ds.MediaType)) {
	case "json":
		v, err := parseJSON(content)
		return v, false, err
	case "yaml", "yml":
		v, err := parseYAML(content)
		if s, ok := v.(string); ok && err == nil {
			return s, true, nil
		}
		return v, false, err
	case "text", "txt", "plain", "markdown", "md":
		return content, true, nil
	case "":
		t := strings.TrimSpace(content)
		if textOK && !strings.HasPrefix(t, "{") && !strings.HasPrefix(t, "[") {
			return content, true, nil
		}
		v, err := parseJSON(content)
		return v, false, err
	default:
		return nil, false, fmt.Errorf("the doc string's type %q is unknown: use json, yaml or text", ds.MediaType)
	}
}

// parseJSON parses one JSON value, as encoding/json decodes it.
func parseJSON(content string) (any, error) {
	if strings.TrimSpace(content) == "" {
		return nil, errors.New("the doc string is not valid JSON: it is empty")
	}
	dec := json.NewDecoder(strings.NewReader(content))
	var v any
	err := dec.Decode(&v)
	if err == nil {
		if _, extra := dec.Token(); extra != io.EOF {
			return nil, errors.New("the doc string is not valid JSON: it holds more than one JSON value")
		}
		return v, nil
	}
	var se *json.SyntaxError
	if errors.As(err, &se) {
		line, col := lineCol(content, int(se.Offset)-1) // Offset is just after the bad byte
		return nil, fmt.Errorf("the doc string is not valid JSON: line %d, column %d: %v", line, col, se)
	}
	if errors.Is(err, io.ErrUnexpectedEOF) {
		return nil, errors.New("the doc string is not valid JSON: it ends before the value does (a missing } or ]?)")
	}
	return nil, fmt.Errorf("the doc string is not valid JSON: %v", err)
}

// lineCol turns a byte offset into 1-based line and column.
func lineCol(s string, off int) (int, int) {
	off = min(max(off, 0), len(s))
	before := s[:off]
	line := strings.Count(before, "\n") + 1
	col := off - strings.LastIndexByte(before, '\n')
	return line, col
}

// parseYAML parses one YAML value and returns it as encoding/json would
// decode its JSON.
func parseYAML(content string) (any, error) {
	var v any
	if err := yaml.Unmarshal([]byte(content), &v); err != nil {
		return nil, fmt.Errorf("the doc string is not valid YAML: %s", strings.TrimPrefix(err.Error(), "yaml: "))
	}
	out, err := jsonvalue.Decode(v)
	if err != nil {
		return nil, fmt.Errorf("the doc string's YAML has no JSON form (map keys must be strings): %v", err)
	}
	return out, nil
}

func equalValues(a, b any) bool {
	return reflect.DeepEqual(jsonvalue.Normalize(a), jsonvalue.Normalize(b))
}

// show is a value for messages: strings quoted, other values as compact
// JSON, cut when long.
func show(v any) string {
	var s string
	if str, ok := v.(string); ok {
		s = quote(str)
	} else {
		s = jsonvalue.Compact(v)
	}
	return cut(s, 600)
}

// text is a value as the contains steps search it: a string as it is,
// anything else as compact JSON.
func text(v any) string { return jsonvalue.Text(v) }

func quote(s string) string {
	b, _ := json.Marshal(s)
	r := strings.NewReplacer(`\u003c`, "<", `\u003e`, ">", `\u0026`, "&")
	return r.Replace(string(b))
}

func cut(s string, n int) string {
	if len(s) <= n {
		return s
	}
	// Cut on a rune boundary.
	for n > 0 && !isRuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}

func isRuneStart(b byte) bool { return b&0xC0 != 0x80 }

// splitList splits "a, b, c" into its trimmed, non-empty items.
func splitList(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}
