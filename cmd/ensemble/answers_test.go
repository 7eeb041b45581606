package main

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// An answers file is read like the project's other YAML files: one
// document, a mapping, errors at FILE:LINE:COL in plain words.
func TestAnswersFile(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, yaml string
		want       map[string]string
		err        string
	}{
		{"scalars and values", "a: yes please\nb: {approved: true}\nc: [1, 2]\n", map[string]string{"a": "yes please", "b": `{"approved":true}`, "c": "[1,2]"}, ""},
		{"a list", "- a\n- b\n", nil, "answers.yaml:1:1: an answers file maps each agent to its answer (approver: yes)"},
		{"a second document", "a: 1\n---\nb: 2\n", nil, "answers.yaml:3:1: only one YAML document is allowed per file"},
		{"an agent twice", "a: 1\na: 2\n", nil, `answers.yaml:2:1: agent "a" is answered twice (first at line 1)`},
		{"a syntax error", "a: [1\n", nil, "answers.yaml:"},
		{"empty", "", nil, "no answer in it"},
		{"null", "~\n", nil, "no answer in it"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			file := filepath.Join(t.TempDir(), "answers.yaml")
			if err := os.WriteFile(file, []byte(tc.yaml), 0o644); err != nil {
				t.Fatal(err)
			}
			got, err := (&answerFlags{answers: file}).parse()
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("error %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil || !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("got %v, %v; want %v", got, err, tc.want)
			}
		})
	}
}
