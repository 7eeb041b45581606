package events_test

import (
	"bytes"
	"encoding/json"
	"io"
	"testing"
	"time"

	"github.com/ensemble-run/ensemble/engine"
	"github.com/ensemble-run/ensemble/events"
	"github.com/ensemble-run/ensemble/state"
)

// fakeResult writes what json.Marshal writes of it, as engine.Result does.
type fakeResult struct {
	Reason string         `json:"completion_reason"`
	State  map[string]any `json:"final_state"`
}

func (r *fakeResult) WritesAsMarshal() bool { return true }

func (r *fakeResult) WriteCompactJSON(w io.Writer) error {
	b, err := json.Marshal(*r)
	if err == nil {
		_, err = w.Write(b)
	}
	return err
}

// Marshal writes every event as json.Marshal does, the run_completed
// event's result spliced in or not.
func TestMarshalIsJSONMarshal(t *testing.T) {
	t.Parallel()
	res := &fakeResult{Reason: "completed", State: map[string]any{"a": "<b> & \"c\"", "n": 1.5}}
	real := &engine.Result{Ensemble: "e", ConversationHistory: []*state.Record{}, Errors: []engine.RunError{}, Warnings: []state.Warning{}, Input: "<in>", CompletionReason: "completed", TurnCount: 2,
		AgentExecutionCount: map[string]int{"b": 1, "a": 2}, FinalState: map[string]any{"a": map[string]any{"x": []any{1.5, "&"}}},
		Output: "out", Usage: state.Usage{InputTokens: 3}, DurationSeconds: 0.25, Parent: &state.Parent{Run: "p", Turn: 1}}
	at := time.Date(2026, 12, 6, 23, 0, 0, 123, time.UTC)
	for name, ev := range map[string]events.Event{
		"completed":        {Type: events.RunCompleted, Time: at, Turn: 3, Message: "completed", Result: res},
		"an engine result": {Type: events.RunCompleted, Time: at, Turn: 2, Message: "completed", Result: real},
		"an empty result":  {Type: events.RunCompleted, Time: at, Result: &engine.Result{}},
		"a nil result":     {Type: events.RunCompleted, Time: at, Result: (*engine.Result)(nil)},
		"with a warning":   {Type: events.RunCompleted, Time: at, Result: res, Warning: map[string]any{"kind": "x"}},
		"with a question":  {Type: events.RunCompleted, Time: at, Result: res, Question: "why?"},
		"with an attempt":  {Type: events.RunCompleted, Time: at, Result: res, Attempt: 2},
		"a plain result":   {Type: events.RunCompleted, Time: at, Result: map[string]any{"x": 1}},
		"agent completed":  {Type: events.AgentCompleted, Time: at, Agent: "a", Output: map[string]any{"k": []any{1, "<"}}},
		"no result at all": {Type: events.RunStarted, Time: at, Message: "input"},
	} {
		want, err := json.Marshal(ev)
		if err != nil {
			t.Fatal(err)
		}
		got, err := events.Marshal(ev)
		if err != nil || !bytes.Equal(got, want) {
			t.Errorf("%s: %v\n%s\nwant\n%s", name, err, got, want)
		}
		// AppendJSON appends the same bytes to what dst holds
		got, err = events.AppendJSON([]byte("x\n"), ev)
		if err != nil || !bytes.Equal(got, append([]byte("x\n"), want...)) {
			t.Errorf("%s: AppendJSON: %v\n%s\nwant x and\n%s", name, err, got, want)
		}
	}
}

// CompletedTurn reads the turn of a turn_completed event's JSON, as the
// servers keep it, and 0 of anything else.
func TestCompletedTurn(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]int{
		`{"type":"turn_completed","turn":3,"timestamp":"2026-12-07T00:00:00Z"}`: 3,
		`{"type":"agent_completed","turn":3}`:                                   0,
		`{"type":"turn_completed"}`:                                             0,
		`not json`:                                                              0,
	} {
		if got := events.CompletedTurn([]byte(in)); got != want {
			t.Errorf("CompletedTurn(%s) = %d, want %d", in, got, want)
		}
	}
}
