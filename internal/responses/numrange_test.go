package responses

import (
	"errors"
	"strings"
	"testing"

	"github.com/ensemble-run/ensemble/ensemble"
	"github.com/ensemble-run/ensemble/internal/jsonvalue"
	"github.com/ensemble-run/ensemble/internal/runners"
)

// A reply that is JSON with a number too large for a float64 is not called
// invalid JSON: the error says what the number is and where it is in the
// reply (a fenced block's number too).
func TestParseJSONReplyNumberOutOfRange(t *testing.T) {
	t.Parallel()
	tests := []struct{ text, want string }{
		{`{"n": 1e999}`, "the reply is JSON, but the number 1e999 at line 1, column 7 is out of range"},
		{"\n  {\"a\": 1,\n   \"n\": -1e400}\n", "the reply is JSON, but the number -1e400 at line 3, column 9 is out of range"},
		{"Here it is:\n```json\n{\"n\": 2e308}\n```", "the reply is JSON, but the number 2e308 at line 3, column 7 is out of range"},
	}
	for _, tt := range tests {
		_, err := runners.ParseJSONReply(tt.text)
		if err == nil || !strings.HasPrefix(err.Error(), tt.want) || strings.Contains(err.Error(), "not valid JSON") {
			t.Errorf("%q: %v\nwant %s", tt.text, err, tt.want)
		}
		if _, ok := errors.AsType[*jsonvalue.NumberRangeError](err); !ok {
			t.Errorf("%q: %T, want a *jsonvalue.NumberRangeError", tt.text, err)
		}
	}
	if _, err := runners.ParseJSONReply(`{"n": 1e999,}`); err == nil || !strings.HasPrefix(err.Error(), "the reply is not valid JSON") {
		t.Errorf("invalid JSON: %v", err)
	}
}

// An injected response to an agent that wants JSON, with a number too
// large for a float64, says what is wrong in one clause: not "output_format
// is json, but the reply is JSON, but the number ...".
func TestInjectedResponseNumberOutOfRange(t *testing.T) {
	t.Parallel()
	for _, a := range []*ensemble.Agent{
		{Name: "judge", Kind: repairKind{}, OutputSchema: approvalSchema(t)},
		{Name: "judge", Kind: jsonKind{}},
	} {
		_, err := injectedOutput(a, `{"approved": true, "n": 1e400}`, 1, "r.yaml:1")
		if err == nil {
			t.Fatal("no error")
		}
		msg := err.Error()
		if !strings.Contains(msg, "the number 1e400 at line 1, column 25 is out of range") || strings.Count(msg, ", but ") > 1 {
			t.Errorf("%s", msg)
		}
	}
}

// jsonKind is an LLM-like kind whose replies must be JSON (output_format:
// json), without an output_schema.
type jsonKind struct{ testKind }

func (jsonKind) String() string                      { return "llm" }
func (jsonKind) JSONReply(a *ensemble.Agent) bool    { return true }
func (jsonKind) OutputRepairs(a *ensemble.Agent) int { return 0 }
