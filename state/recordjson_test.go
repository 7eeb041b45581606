package state

import (
	"encoding/json"
	"reflect"
	"testing"
	"time"
)

// Record.AppendIndent writes exactly what encoding/json writes (MarshalIndent,
// and Marshal when prefix and indent are empty), for a record with every
// field set (the test fails if a field is added to Record and
// left unset here) and for one with every optional field empty.
func TestRecordAppendIndentMatchesEncodingJSON(t *testing.T) {
	t.Parallel()
	errMsg, stop, instance := "it <failed> & \"said\"\n", "end_turn", 4
	full := &Record{
		TurnNumber: 12, AgentName: "writer<1>", Execution: 3, Instance: &instance, Of: "writer<1>",
		InputData:        map[string]any{"dependencies": map[string]any{"a": &OutputRef{AgentName: "a", Execution: 2}, "b": "short"}, "turn": 12.0, "list": []any{1.5, nil, true}},
		OutputData:       map[string]any{"text": "héllo\u2028", "n": 1e-7},
		Error:            &errMsg,
		Stderr:           "warn\tline",
		ExecutionTime:    0.000012374,
		Timestamp:        time.Date(2026, 11, 23, 15, 44, 34, 589667350, time.UTC),
		StopReason:       &stop,
		Usage:            &Usage{Requests: 2, InputTokens: 300, OutputTokens: 40, Cost: 0.00123},
		ModelProfileUsed: "backup",
		Handles:          []ExecutionRef{{AgentName: "fetch", Execution: 2}, {AgentName: "b\"x", Execution: 1}},
		Child: &Child{Ensemble: "review", CompletionReason: "completed", TurnCount: 2,
			ConversationHistory: []*Record{{AgentName: "critic<2>", OutputData: "ok", Timestamp: time.Unix(5, 0).UTC()}}},
		Iterations: 3,
	}
	v := reflect.ValueOf(full).Elem()
	for i := range v.NumField() {
		if v.Type().Field(i).IsExported() && v.Field(i).IsZero() {
			t.Fatalf("field %s is not set in the full record", v.Type().Field(i).Name)
		}
	}
	recs := []*Record{full, {AgentName: "a", Timestamp: time.Unix(0, 0).UTC()}}
	// Times in other zones and at the edges of what JSON takes.
	for _, ts := range []time.Time{
		time.Date(2026, 1, 2, 3, 4, 5, 0, time.FixedZone("", 5*3600+30*60)),
		time.Date(1, 1, 1, 0, 0, 0, 1, time.FixedZone("", -(23*3600+59*60))),
		time.Date(9999, 12, 31, 23, 59, 59, 999999999, time.UTC),
		time.Date(2026, 1, 2, 3, 4, 5, 6, time.Local),
	} {
		recs = append(recs, &Record{AgentName: "t", Timestamp: ts})
	}
	for _, rec := range recs {
		for _, pi := range [][2]string{{"", "  "}, {"    ", "  "}, {"", ""}} {
			want, err := json.MarshalIndent(rec, pi[0], pi[1])
			if pi == [2]string{} {
				want, err = json.Marshal(rec)
			}
			if err != nil {
				t.Fatal(err)
			}
			got, err := rec.AppendIndent(nil, pi[0], pi[1])
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != string(want) {
				t.Fatalf("prefix %q, indent %q:\ngot  %s\nwant %s", pi[0], pi[1], got, want)
			}
		}
	}
}
