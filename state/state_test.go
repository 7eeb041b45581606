package state_test

import (
	"reflect"
	"sort"
	"testing"
	"time"

	"github.com/ensemble-run/ensemble/internal/conditions"
	"github.com/ensemble-run/ensemble/state"
)

type message struct {
	Role    string `json:"role"`
	Content string `json:"content"`
}

// TestHistoryValuesAreTheRecordsOfSection6: conditions see every field of a
// history record by its JSON name, typed input data included.
func TestHistoryValuesAreTheResultRecords(t *testing.T) {
	t.Parallel()
	st := state.New("in")
	stop, fail := "end_turn", "boom"
	st.AppendRecord(&state.Record{TurnNumber: 1, AgentName: "llm", Execution: 1,
		InputData: []message{{Role: "user", Content: "hello"}}, OutputData: "hi",
		Timestamp: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), StopReason: &stop,
		Usage: &state.Usage{Requests: 2, InputTokens: 30, OutputTokens: 7}})
	st.AppendRecord(&state.Record{TurnNumber: 2, AgentName: "script", Execution: 1, Error: &fail})

	got := st.HistoryValues()[0].(map[string]any)
	var keys []string
	for k := range got {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	// instance, instances, of and skipped are there, null or false, for
	// every record: reading them is no read of a missing key.
	want := []string{"agent_name", "error", "execution", "execution_time", "handles", "input_data", "instance", "instances", "of", "output_data",
		"skipped", "status", "stderr", "stop_reason", "timestamp", "turn_number", "usage"}
	if !reflect.DeepEqual(keys, want) {
		t.Fatalf("keys %v, want %v", keys, want)
	}
	for _, tc := range []struct {
		expr string
		want bool
	}{
		{`history[0].input_data[0].content == "hello"`, true},
		{`history[0].stop_reason == "end_turn" && history[0].usage.input_tokens == 30`, true},
		{`history[0].timestamp == "2026-01-01T00:00:00Z"`, true},
		{`history[1].error == "boom" && history[1].stop_reason == nil && history[1].usage == nil`, true},
		{`history[-1].agent_name == "llm"`, false},
		{`history[0].status == "ok" && history[1].status == "failed"`, true},
	} {
		p, err := conditions.Compile(tc.expr)
		if err != nil {
			t.Fatalf("%s: %v", tc.expr, err)
		}
		ok, err := p.Eval(&conditions.Env{History: st.HistoryValues()})
		if err != nil || ok != tc.want {
			t.Errorf("%s = %v (%v), want %v", tc.expr, ok, err, tc.want)
		}
	}
}
