package store

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/ensemble-run/ensemble/state"
)

// A turn's row holds its records, counts, context and edges as
// encoding/json writes them (maps with their keys sorted, HTML characters
// escaped, strings untouched), for the agents of the turn's records only.
func TestTurnRowIsEncodingJSON(t *testing.T) {
	t.Parallel()
	errMsg, stop := "it <failed> & \"said\" \\ \n  twice", "end turn"
	recs := []*state.Record{
		{
			TurnNumber: 12, AgentName: "writer <1>", Execution: 3,
			InputData:     map[string]any{"dependencies": map[string]any{"a": &state.OutputRef{AgentName: "a", Execution: 2}, "b": " short \\\" "}, "turn": 12.0, "list": []any{1.5, nil, true, []any{}, map[string]any{}}},
			OutputData:    map[string]any{"text": "héllo\u2028 \t", "n": 1e-7, "k e y": "\\"},
			Error:         &errMsg,
			Stderr:        "warn\tline \"x\"",
			ExecutionTime: 0.000012374,
			Timestamp:     time.Date(2026, 11, 23, 15, 44, 34, 589667350, time.UTC),
			StopReason:    &stop,
			Usage:         &state.Usage{Requests: 2, InputTokens: 300, OutputTokens: 40},
			Handles:       []state.ExecutionRef{{AgentName: "fetch", Execution: 2}, {AgentName: "b\" x", Execution: 1}},
		},
		{AgentName: "a", Timestamp: time.Unix(0, 0).UTC(), OutputData: "  "},
	}
	st := state.Restore(state.Contents{
		Input:               "go",
		TurnCount:           2,
		History:             append([]*state.Record{{AgentName: "earlier", Timestamp: time.Unix(0, 0).UTC()}}, recs...), // the first is saved already
		AgentExecutionCount: map[string]int{"writer <1>": 3, "a": 1, "earlier": 1},
		OutputCount:         map[string]int{"a": 1, "earlier": 1},
		AccumulatedContext:  map[string]any{"a": "  ", "earlier": "x", "writer <1>": "not new"},
		Edges: map[string]map[string]*state.EdgeState{
			"writer <1>": {"z<": {Triggered: 2}, "b": {Consumed: 1}},
			"earlier":    {"a": {Consumed: 1}},
			"a":          {"gone": nil},
		},
	})
	w := &Writer{run: &RunInfo{seq: 7}, stateKey: func(s string) string { return s },
		records: 1, outputs: map[string]int{"earlier": 1}, memory: map[string][]byte{}}
	row, err := w.delta(st)
	if err != nil {
		t.Fatal(err)
	}
	marshal := func(v any) string {
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	for i, want := range []any{
		int64(7), int64(2), marshal(recs),
		marshal(map[string][2]int{"a": {1, 1}, "writer <1>": {3, 0}}),
		marshal([][2]any{{"a", "  "}}),
		marshal(map[string]any{"a": map[string]any{"gone": nil}, "writer <1>": st.Edges("writer <1>")}),
		nil, nil,
	} {
		if row[i] != want {
			t.Errorf("column %d: got %v\nwant %v", i+1, row[i], want)
		}
	}
	if _, err := time.Parse(timeFormat, row[8].(string)); err != nil {
		t.Errorf("saved_at: %v", err)
	}
}
