package conditions

import (
	"context"
	"fmt"
	"strings"
	"testing"
)

func TestCompileList(t *testing.T) {
	t.Parallel()
	for src, want := range map[string]string{
		"context.splitter.chunks":        "",
		"[1, 2, 3]":                      "",
		"split(input, ',')":              "",
		"filter(history, .error != nil)": "",
		"'text'":                         "must yield a list, but it is always a string",
		"42":                             "must yield a list, but it is always a number",
		"len(input)":                     "must yield a list, but it is always a number",
		"turn_count > 1":                 "must yield a list, but it is always a boolean",
		"nil":                            "must yield a list, but it is always nil",
		"{'a': 1}":                       "must yield a list, but it is always a map",
		"output":                         "unknown name output",
		"[1, ":                           "column",
	} {
		_, err := CompileList(src)
		switch {
		case want == "" && err != nil:
			t.Errorf("%s: %v", src, err)
		case want != "" && (err == nil || !strings.Contains(err.Error(), want)):
			t.Errorf("%s: got %v, want %q", src, err, want)
		}
	}
}

func TestListEval(t *testing.T) {
	t.Parallel()
	env := &Env{Context: map[string]any{"s": map[string]any{"chunks": []any{"a", 1.0}, "text": "x"}}, Input: "a,b,c"}
	for src, want := range map[string]string{
		"context.s.chunks":  "[a 1]",
		"split(input, ',')": "[a b c]",
		"context.s.text":    "error: must yield a list, but it returned a string",
		"context.s.none":    "error: must yield a list, but it returned null",
		"context.t.x":       "error:",
	} {
		l, err := CompileList(src)
		if err != nil {
			t.Fatalf("%s: %v", src, err)
		}
		items, err := l.EvalContext(context.Background(), env)
		got := ""
		if err != nil {
			got = "error: " + err.Error()
			if re, ok := err.(*RuntimeError); !ok || re.What != "fan_out.over" {
				t.Errorf("%s: error %#v", src, err)
			}
		} else {
			got = fmt.Sprint(items)
		}
		if !strings.HasPrefix(got, want) {
			t.Errorf("%s: got %s, want %s", src, got, want)
		}
	}
}
