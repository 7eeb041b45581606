package bdd

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A failed step quotes the value a model gave: its control characters are
// escaped, in the pretty format as in the others, so a model's reply cannot
// drive the terminal of the person running `ensemble test`.
func TestStepErrorsEscapeControlCharacters(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	files := map[string]string{
		"e.yaml": `name: e
models:
  m: {provider: openai, model: m, base_url: "http://127.0.0.1:9/v1"}
agents:
  - name: writer
    model_profile: m
    prompt: write
  - name: after
    model_profile: m
    prompt: go on
    dependencies: [writer]
    when: "context.writer.abcdefghijk"
`,
		"r.yaml": "writer: [{\"abcdefghijk\\e[1\": 1}]\nafter: [ok]\n",
		"t.feature": `Feature: escapes
  Scenario: a reply with escapes
    Given the ensemble "e.yaml"
    And the responses file "r.yaml"
    When the ensemble runs
    Then there is a warning containing "something else"
`,
	}
	for name, body := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, format := range []string{"pretty", "progress"} {
		for _, noColors := range []bool{false, true} {
			var out bytes.Buffer
			code, err := Run(RunOptions{Paths: []string{filepath.Join(dir, "t.feature")}, Format: format, NoColors: noColors, Output: &out, Stderr: &out})
			if code != ExitFailed || err != nil {
				t.Fatalf("%s: exit %d, %v\n%s", format, code, err, out.String())
			}
			// With colours godog writes its own escapes: the model's is
			// the one right after the key.
			got := out.String()
			if strings.Contains(got, "abcdefghijk\x1b") {
				t.Errorf("%s (no colours: %v): the model's escape reaches the terminal:\n%q", format, noColors, got)
			}
			if !strings.Contains(got, `abcdefghijk\x1b[1`) {
				t.Errorf("%s (no colours: %v): the key is not shown escaped:\n%q", format, noColors, got)
			}
		}
	}
}
