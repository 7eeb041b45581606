package capture

import (
	"encoding/json"
	"strings"
	"testing"

	gherkin "github.com/cucumber/gherkin/go/v26"
	messages "github.com/cucumber/messages/go/v21"
)

// docStringOf parses a step with the doc string written by docString.
func docStringOf(t *testing.T, doc string) *messages.DocString {
	t.Helper()
	src := "Feature: f\n  Scenario: s\n    Given the input:\n" + doc
	gd, err := gherkin.ParseGherkinDocument(strings.NewReader(src), (&messages.Incrementing{}).NewId)
	if err != nil {
		t.Fatalf("%v\n%s", err, src)
	}
	return gd.Feature.Children[0].Scenario.Steps[0].DocString
}

// What a doc string holds reads back as it was written, whatever delimiters
// and escapes it holds; what none can hold is refused, and JSON always fits.
func TestDocStringsReadBack(t *testing.T) {
	t.Parallel()
	for _, content := range []string{
		"plain",
		"two\nlines\n\n  indented\n\ttabbed",
		`a """ inside a line`,
		"\"\"\"\nstarts a line",
		"```\nstarts a line",
		`escaped \"\"\" quotes`,
		"escaped \\`\\`\\` backquotes",
		"escaped \\`\\`\\` backquotes, and\n```\nat a start",
		"trailing newline\n",
		"# not a comment\n| not | a table |\n@not a tag",
		"Scenario: not a scenario\n  Given not a step\nFeature: nor a feature",
		"trailing spaces   \n   \nand a lone \r inside a line",
		"unicode: é — 日本語 \u00a0\u3000 \U0001F600",
	} {
		var b strings.Builder
		if !docString(&b, "text", content) {
			t.Errorf("no doc string holds %q", content)
			continue
		}
		if ds := docStringOf(t, b.String()); ds.Content != content || ds.MediaType != "text" {
			t.Errorf("%q read back as %q (%q):\n%s", content, ds.Content, ds.MediaType, b.String())
		}
	}
	// Gherkin reads a line's \r\n as its end: no doc string keeps a
	// carriage return at the end of a line (an output falls back to JSON).
	for _, content := range []string{"\"\"\" and\n``` start lines", "windows\r\nlines", "ends in\r"} {
		var b strings.Builder
		if docString(&b, "", content) || b.Len() > 0 {
			t.Errorf("%q, which no doc string can hold, was written:\n%s", content, b.String())
		}
	}
	var b strings.Builder
	outputStep(&b, "a", "windows\r\nlines\r\n")
	src := "Feature: f\n  Scenario: s\n" + b.String()
	gd, err := gherkin.ParseGherkinDocument(strings.NewReader(src), (&messages.Incrementing{}).NewId)
	if err != nil {
		t.Fatalf("%v\n%s", err, src)
	}
	var read any
	ds := gd.Feature.Children[0].Scenario.Steps[0].DocString
	if err := json.Unmarshal([]byte(ds.Content), &read); err != nil || read != "windows\r\nlines\r\n" {
		t.Errorf("an output with \\r\\n reads back as %q (%v):\n%s", read, err, src)
	}
	b.Reset()

	value := map[string]any{"q": "\"\"\"\n```", "b": "\\\"", "k\"\"\"": []any{"`", "\\"}}
	j, _ := json.MarshalIndent(value, "", "  ")
	b.Reset()
	if !docString(&b, "json", docSafeJSON(string(j))) {
		t.Fatalf("no doc string holds the JSON %s", docSafeJSON(string(j)))
	}
	var got map[string]any
	if err := json.Unmarshal([]byte(docStringOf(t, b.String()).Content), &got); err != nil {
		t.Fatalf("%v:\n%s", err, b.String())
	}
	if g, _ := json.Marshal(got); string(g) != string(must(json.Marshal(value))) {
		t.Errorf("the JSON read back as %s", g)
	}
}

func must(b []byte, err error) []byte {
	if err != nil {
		panic(err)
	}
	return b
}
