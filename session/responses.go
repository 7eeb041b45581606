package session

import (
	"github.com/ensemble-run/ensemble/ensemble"
	"github.com/ensemble-run/ensemble/internal/responses"
)

// Responses are injected responses (docs/testing.md#the-responses-file),
// for Models.Responses: a program outside this module reads them with
// LoadResponses or ParseResponses, or starts from NewResponses and adds
// its own (Add, AddText, SetSimulate).
type Responses = responses.Responses

// ResponseEntry is what Responses inject for one agent (Responses.Entry):
// its values in order, or the model that plays it (Simulation).
type (
	ResponseEntry = responses.ResponseEntry
	Simulation    = responses.Simulation
)

// NewResponses is an empty set of injected responses.
func NewResponses() *Responses { return responses.NewResponses() }

// ParseResponses reads a responses file's content; name is the file's
// name in error messages. Its problems come back as one
// *ensemble.ErrorList.
func ParseResponses(name string, data []byte) (*Responses, error) {
	return responses.ParseResponses(name, data)
}

// LoadResponses reads the responses file at path for the ensemble e,
// checking that every agent it names is one of e's.
func LoadResponses(path string, e *ensemble.Ensemble) (*Responses, error) {
	return responses.LoadResponsesFor(path, e)
}
