package state_test

import (
	"errors"
	"path/filepath"
	"testing"

	"github.com/ensemble-run/ensemble/state"
)

// runTurnsTo adds turns to st, each an execution of agent "a", until it has
// run n turns: the state a run would save after them.
func runTurnsTo(st *state.State, n int) {
	for st.TurnCount < n {
		st.TurnCount++
		st.CountExecution("a")
		st.SetOutput("a", "a", "more")
		st.AppendRecord(&state.Record{TurnNumber: st.TurnCount, AgentName: "a", Execution: st.Executions("a"), OutputData: "more"})
	}
}

// Each file of testdata/consistency is valid.json edited by hand so that
// one thing no run could have saved is true of it.
func TestLoadRejectsInconsistentStates(t *testing.T) {
	t.Parallel()
	if _, err := state.Load(filepath.Join("testdata", "consistency", "valid.json")); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ file, msg string }{
		{"history-emptied", `state.turn_count is 5 but state.conversation_history is empty`},
		{"last-turn-missing", `state.turn_count is 5 but the last record of state.conversation_history is of turn 4`},
		{"record-removed", `state.agent_execution_count.checker is 1 but state.conversation_history has 0 records of "checker"`},
		{"turn-gap", `state.conversation_history[5].turn_number is 6 but no record is of turn 5 (every turn runs an agent)`},
		{"turn-goes-back", `state.conversation_history[3].turn_number is 2, before the turn 3 of the record above it`},
		{"twice-in-a-turn", `state.conversation_history[2] is a second record of agent "writer" in turn 2 (an agent runs at most once a turn)`},
		{"execution-number", `state.conversation_history[0].execution is 2 but it is record 1 of agent "seed"`},
		{"no-agent-name", `state.conversation_history[0].agent_name is empty`},
		{"execution-count", `state.agent_execution_count.writer is 3 but state.conversation_history has 2 records of "writer"`},
		{"execution-count-missing", `state.agent_execution_count.checker is 0 but state.conversation_history has 1 records of "checker"`},
		{"output-count", `state.output_count.checker is 1 but state.conversation_history has 0 successful records of "checker"`},
		{"negative-execution-time", `state.conversation_history[1].execution_time is negative`},
		{"negative-usage", `state.conversation_history[1].usage holds a negative count`},
		{"edge-consumed-unproduced", `state.edges.reviewer.writer.consumed is 3 but "writer" ran 2 times`},
		{"edge-consumed-never-ran", `state.edges.judge.reviewer.consumed is 1 but "judge" never ran (it consumes when it runs)`},
		{"edge-triggered-unconsumed", `state.edges.checker.seed.triggered is 2 but consumed is 1 (each trigger consumes a new output)`},
		{"edge-triggered-more-than-runs", `state.edges.seed.writer.triggered is 2 but "seed" ran 1 times`},
		{"pending-from-no-output", `state.pending_requests[0].from is "checker", which has no output to have made the request`},
		{"warning-turn", `state.warnings[0].turn_number is 7, outside 1..6`},
	} {
		t.Run(tc.file, func(t *testing.T) {
			t.Parallel()
			path := filepath.Join("testdata", "consistency", tc.file+".json")
			_, err := state.Load(path)
			var fe *state.FileError
			if want := "state file " + path + ": " + tc.msg; !errors.As(err, &fe) || err.Error() != want {
				t.Fatalf("error\n  %v\nwant a *FileError\n  %s", err, want)
			}
		})
	}
}
