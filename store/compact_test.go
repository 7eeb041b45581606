package store

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/ensemble-run/ensemble/state"
)

// A turn's records are written as encoding/json writes them: the record's
// indented form less its whitespace, strings untouched.
func TestCompactRecordsAreEncodingJSON(t *testing.T) {
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
	for _, r := range recs {
		want, err := json.Marshal(r)
		if err != nil {
			t.Fatal(err)
		}
		ind, err := r.AppendIndent(nil, "", "")
		if err != nil {
			t.Fatal(err)
		}
		if got := compact(nil, ind); string(got) != string(want) {
			t.Errorf("got  %s\nwant %s", got, want)
		}
	}
}

// A turn's counts are written as encoding/json writes them.
func TestCountsAreEncodingJSON(t *testing.T) {
	t.Parallel()
	for _, counts := range []map[string][2]int{{}, {"b": {1, 0}, "a<&>": {12, -3}, "": {0, 0}, "é\"x": {7, 7}}} {
		want, err := json.Marshal(counts)
		if err != nil {
			t.Fatal(err)
		}
		if got := encodeCounts(nil, counts); got != string(want) {
			t.Errorf("got  %s\nwant %s", got, want)
		}
	}
}
