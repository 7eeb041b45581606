package state

import (
	"strings"
	"testing"
)

// A fan-out's instance records are part of their agent's execution: they
// are not counted as executions, and must name their agent and position.
func TestConsistentWithFanOutInstances(t *testing.T) {
	t.Parallel()
	build := func(edit func(s *State)) *State {
		zero, one := 0, 1
		s := Restore(Contents{TurnCount: 2, History: []*Record{
			{TurnNumber: 1, AgentName: "split", Execution: 1, OutputData: "x"},
			{TurnNumber: 2, AgentName: "sum[0]", Instance: &zero, Of: "sum", Execution: 1, OutputData: "a"},
			{TurnNumber: 2, AgentName: "sum[1]", Instance: &one, Of: "sum", Execution: 1},
			{TurnNumber: 2, AgentName: "sum", Execution: 1, OutputData: []any{"a", nil}},
		}, AgentExecutionCount: map[string]int{"split": 1, "sum": 1}, OutputCount: map[string]int{"split": 1, "sum": 1}})
		s.history[2].Error = new(string)
		if edit != nil {
			edit(s)
		}
		return s
	}
	if err := build(nil).consistent(); err != nil {
		t.Fatal(err)
	}
	for want, edit := range map[string]func(s *State){
		`state.conversation_history[1].agent_name is "sum[1]" but the record is instance 0 of "sum"`: func(s *State) { s.history[1].AgentName = "sum[1]" },
		`state.conversation_history[2] has one of instance and of without the other`:                 func(s *State) { s.history[2].Of = "" },
		`state.conversation_history[3] is a second record of agent "sum" in turn 2`: func(s *State) {
			s.history[2].Instance, s.history[2].Of, s.history[2].AgentName = nil, "", "sum"
		},
	} {
		err := build(edit).consistent()
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("got %v, want %q", err, want)
		}
	}
}
