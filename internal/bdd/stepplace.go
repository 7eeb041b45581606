package bdd

import (
	"fmt"
	"strings"

	messages "github.com/cucumber/messages/go/v21"
)

// stepPlace is where a step of a feature file is written: its keyword and
// its FILE:LINE.
type stepPlace struct {
	keyword string
	where   string
}

// stepPlaces are the steps of the features a formatter was shown, by
// their id in godog's parse (unique across the features of a run).
type stepPlaces map[string]stepPlace

// add indexes the steps of the feature at uri (godog's name of the file,
// maybe with the :LINE it was given).
func (sp stepPlaces) add(doc *messages.GherkinDocument, uri string) {
	if doc == nil || doc.Feature == nil {
		return
	}
	file := featureFile(uri)
	for id, st := range indexDocument(doc).steps {
		sp[id] = stepPlace{keyword: strings.TrimSpace(st.Keyword), where: fmt.Sprintf("%s:%d", file, st.Location.Line)}
	}
}

// name is a step as a failure names it: its keyword and text, and where
// it is written, `Then the turn count is 4 (f.feature:12)`; the text alone
// when the step is not known. An outline's step is its template's line.
func (sp stepPlaces) name(st *messages.PickleStep) string {
	if len(st.AstNodeIds) == 0 {
		return st.Text
	}
	p, ok := sp[st.AstNodeIds[0]]
	if !ok {
		return st.Text
	}
	return fmt.Sprintf("%s %s (%s)", p.keyword, st.Text, p.where)
}

// featureFile is the feature file of a godog uri: godog appends the :LINE a
// file was given with (features/a.feature:12) to its uri.
func featureFile(uri string) string {
	file, _ := splitLine(uri)
	return file
}
