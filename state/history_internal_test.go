package state

import "testing"

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
