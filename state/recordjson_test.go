package state

import (
	"bytes"
	"encoding/json"
	"reflect"
	"testing"
	"time"
)

// Record.AppendIndent writes exactly what encoding/json writes of the
// record's fields (MarshalIndent, and Marshal when prefix and indent are
// empty), for a record with every field set (the test fails if a field is
// added to Record and left unset here) and for one with every optional
// field empty; its details follow, each indented as the rest.
func TestRecordAppendIndentMatchesEncodingJSON(t *testing.T) {
	t.Parallel()
	errMsg, stop, instance := "it <failed> & \"said\"\n", "end_turn", 4
	full := &Record{
		TurnNumber: 12, AgentName: "writer<1>", Execution: 3, Instance: &instance, Of: "writer<1>", Skipped: true,
		InputData:     map[string]any{"dependencies": map[string]any{"a": &OutputRef{AgentName: "a", Execution: 2}, "b": "short"}, "turn": 12.0, "list": []any{1.5, nil, true}},
		OutputData:    map[string]any{"text": "héllo\u2028", "n": 1e-7},
		Error:         &errMsg,
		Stderr:        "warn\tline",
		ExecutionTime: 0.000012374,
		Timestamp:     time.Date(2026, 11, 23, 15, 44, 34, 589667350, time.UTC),
		StopReason:    &stop,
		Usage:         &Usage{Requests: 2, InputTokens: 300, OutputTokens: 40, Cost: 0.00123},
		Handles:       []ExecutionRef{{AgentName: "fetch", Execution: 2}, {AgentName: "b\"x", Execution: 1}},
	}
	for _, d := range []struct {
		key string
		v   any
	}{
		{"model_profile_used", "backup"},
		{"child", &Child{Ensemble: "review", CompletionReason: "completed", TurnCount: 2,
			ConversationHistory: []*Record{{AgentName: "critic<2>", OutputData: "ok", Timestamp: time.Unix(5, 0).UTC()}}}},
		{"iterations", 3},
	} {
		if err := full.Details.Put(d.key, d.v); err != nil {
			t.Fatal(err)
		}
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
	// want is what encoding/json writes of the fields, then the details
	// as members of the same object.
	type plain Record
	want := func(rec *Record, prefix, indent string) string {
		b, err := json.Marshal((*plain)(rec))
		if err != nil {
			t.Fatal(err)
		}
		if len(rec.Details) > 0 {
			d, _ := rec.Details.MarshalJSON()
			b = append(append(b[:len(b)-1], ','), d[1:]...)
		}
		if prefix == "" && indent == "" {
			return string(b)
		}
		var buf bytes.Buffer
		if err := json.Indent(&buf, b, prefix, indent); err != nil {
			t.Fatal(err)
		}
		return buf.String()
	}
	for _, rec := range recs {
		for _, pi := range [][2]string{{"", "  "}, {"    ", "  "}, {"", ""}} {
			got, err := rec.AppendIndent(nil, pi[0], pi[1])
			if err != nil {
				t.Fatal(err)
			}
			if w := want(rec, pi[0], pi[1]); string(got) != w {
				t.Fatalf("prefix %q, indent %q:\ngot  %s\nwant %s", pi[0], pi[1], got, w)
			}
		}
	}
	// Read back, a record has its details again (those registered).
	RegisterDetail("model_profile_used", "child", "iterations")
	b, err := json.Marshal(full)
	if err != nil {
		t.Fatal(err)
	}
	var back Record
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	again, _ := json.Marshal(&back)
	if string(again) != string(b) || back.Child() == nil || back.Child().ConversationHistory[0].AgentName != "critic<2>" {
		t.Errorf("read back:\n%s\nwritten:\n%s", again, b)
	}
}
