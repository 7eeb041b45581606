package bdd

import (
	"bytes"
	"fmt"

	gherkin "github.com/cucumber/gherkin/go/v26"
	messages "github.com/cucumber/messages/go/v21"

	"github.com/ensemble-run/ensemble/ensemble"
	"github.com/ensemble-run/ensemble/internal/readcap"
)

// docStringLine is the line of the feature file at which the doc string
// with content under a step of that text starts (its opening """ line), or
// 0 when the file has no such doc string: one of a Scenario Outline, filled
// from its examples, is not in the file as it is. Identical steps with
// identical doc strings have the same problems at the same places: the
// first one is named.
func docStringLine(file, text, content string) int64 {
	data, err := readcap.ReadFile(file, ensemble.MaxFileSize)
	if err != nil {
		return 0
	}
	doc, err := gherkin.ParseGherkinDocument(bytes.NewReader(data), (&messages.Incrementing{}).NewId)
	if err != nil || doc.Feature == nil {
		return 0
	}
	var found int64
	for _, st := range indexDocument(doc).steps {
		if ds := st.DocString; ds != nil && st.Text == text && ds.Content == content && (found == 0 || ds.Location.Line < found) {
			found = ds.Location.Line
		}
	}
	return found
}

// docStringPlace is the FILE:LINE of line l of a doc string whose opening
// line is at, for the start of a message; "" when at is 0.
func docStringPlace(file string, at int64, l int) string {
	if at == 0 || l < 1 {
		return ""
	}
	return fmt.Sprintf("%s:%d: ", file, at+int64(l))
}
