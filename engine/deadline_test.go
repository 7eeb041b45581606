package engine_test

import (
	"slices"
	"testing"
	"time"

	"github.com/ensemble-run/ensemble/engine"
	"github.com/ensemble-run/ensemble/state"
)

// A saved deadline stands while its agent has not run since; it has
// passed at its time; only a run waiting for answers has deadlines to
// apply.
func TestDeadlinesStandUntilTheAgentRuns(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 12, 8, 9, 0, 0, 0, time.UTC)
	st := state.New("x")
	st.CountExecution("ran") // once since its deadline was saved
	f := &state.File{CompletionReason: engine.AwaitingInput, State: st, Stopped: &state.Stopped{Deadlines: []state.Deadline{
		{Agent: "waits", At: at, Executions: 0},
		{Agent: "ran", At: at, Executions: 0},
		{Agent: "later", At: at.Add(time.Hour), Executions: 0},
	}}}
	var standing []string
	for _, d := range engine.Deadlines(f) {
		standing = append(standing, d.Agent)
	}
	if !slices.Equal(standing, []string{"waits", "later"}) {
		t.Errorf("standing %v", standing)
	}
	if got := engine.Passed(f, at.Add(-time.Second)); len(got) != 0 {
		t.Errorf("passed before the deadline: %v", got)
	}
	if got := engine.Passed(f, at); !slices.Equal(got, []string{"waits"}) {
		t.Errorf("passed at the deadline: %v", got)
	}
	ds := engine.AnswerDeadlines(f, at)
	if !ds["waits"].Passed || ds["later"].Passed || len(ds) != 2 {
		t.Errorf("answer deadlines %+v", ds)
	}
	f.CompletionReason = engine.Completed
	if got := engine.Passed(f, at.Add(48*time.Hour)); len(got) != 0 {
		t.Errorf("a completed run: %v", got)
	}
}
