package state

import (
	"encoding/json"
	"testing"
)

// The conditions' view of the history is built on first use and then kept
// in step: records appended before anyone asked cost nothing.
func TestHistoryValuesLazy(t *testing.T) {
	t.Parallel()
	s := New("")
	s.AppendRecord(&Record{AgentName: "a", Execution: 1, TurnNumber: 1})
	if s.historyAny != nil {
		t.Fatalf("view built before it was asked for: %v", s.historyAny)
	}
	if got := s.HistoryValues(); len(got) != 1 {
		t.Fatalf("view has %d records, want 1", len(got))
	}
	s.AppendRecord(&Record{AgentName: "b", Execution: 1, TurnNumber: 2})
	got := s.HistoryValues()
	if len(got) != 2 || got[1].(map[string]any)["agent_name"] != "b" {
		t.Fatalf("view not kept in step: %v", got)
	}
}

// The record of a fan-out's execution holds its instances' views, in item
// order, however the view was built: at once or record by record, and
// from records read back from a state file.
func TestHistoryValuesInstances(t *testing.T) {
	t.Parallel()
	fail := "boom"
	records := func() []*Record {
		zero, one := 0, 1
		return []*Record{
			{TurnNumber: 1, AgentName: "split", Execution: 1},
			// An earlier execution of the fan-out: not among the instances of the next.
			{TurnNumber: 1, AgentName: "work[0]", Instance: &zero, Of: "work", Execution: 1},
			{TurnNumber: 1, AgentName: "work", Execution: 1, InputData: map[string]any{"fan_out": map[string]any{"count": 1}}},
			{TurnNumber: 2, AgentName: "work[0]", Instance: &zero, Of: "work", Execution: 2, OutputData: "a"},
			{TurnNumber: 2, AgentName: "work[1]", Instance: &one, Of: "work", Execution: 2, Error: &fail},
			{TurnNumber: 2, AgentName: "work", Execution: 2, InputData: map[string]any{"fan_out": map[string]any{"count": 2}}},
			{TurnNumber: 3, AgentName: "work", Execution: 3, InputData: map[string]any{"fan_out": map[string]any{"count": 0}}},
		}
	}
	check := func(name string, view []any) {
		t.Helper()
		rec := func(i int) map[string]any { return view[i].(map[string]any) }
		if v, ok := rec(0)["instances"]; !ok || v != nil {
			t.Errorf("%s: a record without fan_out has instances %v, want null", name, v)
		}
		if got := rec(2)["instances"].([]any); len(got) != 1 || got[0].(map[string]any)["agent_name"] != "work[0]" {
			t.Errorf("%s: first fan-out's instances %v", name, got)
		}
		got := rec(5)["instances"].([]any)
		if len(got) != 2 {
			t.Fatalf("%s: second fan-out's instances %v", name, got)
		}
		a, b := got[0].(map[string]any), got[1].(map[string]any)
		if a["status"] != "ok" || a["output_data"] != "a" || a["instance"] != 0 || b["status"] != "failed" || b["error"] != "boom" || b["instance"] != 1 {
			t.Errorf("%s: instances %v %v", name, a, b)
		}
		if got := rec(6)["instances"].([]any); len(got) != 0 {
			t.Errorf("%s: an empty fan-out has instances %v", name, got)
		}
	}

	s := New("")
	for _, r := range records() {
		s.AppendRecord(r)
	}
	check("built at once", s.HistoryValues())

	s = New("")
	s.HistoryValues()
	for _, r := range records() {
		s.AppendRecord(r)
	}
	check("built record by record", s.HistoryValues())

	b, err := json.Marshal(records())
	if err != nil {
		t.Fatal(err)
	}
	var read []*Record
	if err := json.Unmarshal(b, &read); err != nil {
		t.Fatal(err)
	}
	s = New("")
	for _, r := range read {
		s.AppendRecord(r)
	}
	check("read back", s.HistoryValues())
}
