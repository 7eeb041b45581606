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
	var b strings.Builder
	if docString(&b, "", "\"\"\" and\n``` start lines") || b.Len() > 0 {
		t.Errorf("a content that starts lines with both delimiters was written:\n%s", b.String())
	}

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
