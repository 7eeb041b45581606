package store

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/ensemble-run/ensemble/state"
)

// A turn whose records take more than keepRecords (a fan-out's) is
// written from its encoding buffer, not a copy of it, and the writer does
// not keep that buffer for its next turns; a small turn's buffer is kept
// and its row is a copy, which the next turn's encoding cannot change.
func TestLargeTurnBufferIsNotKept(t *testing.T) {
	t.Parallel()
	big := strings.Repeat("x", keepRecords)
	rec := func(out string) *state.Record {
		return &state.Record{AgentName: "a", Execution: 1, OutputData: out, Timestamp: time.Unix(0, 0).UTC()}
	}
	w := &Writer{run: &RunInfo{seq: 1}, stateKey: func(s string) string { return s }, outputs: map[string]int{}, memory: map[string][]byte{}}
	var rows []string
	var history []*state.Record
	for turn, out := range []string{"small", big, "tiny"} {
		history = append(history, rec(out))
		st := state.Restore(state.Contents{TurnCount: turn + 1, History: history,
			AgentExecutionCount: map[string]int{"a": 1}, OutputCount: map[string]int{"a": 1}})
		row, err := w.delta(st)
		if err != nil {
			t.Fatal(err)
		}
		rows = append(rows, row[2].(string))
		if kept := w.rec != nil; kept != (out != big) {
			t.Errorf("turn %d: buffer kept %v", turn+1, kept)
		}
		w.mark(st)
	}
	for i, out := range []string{"small", big, "tiny"} {
		b, _ := json.Marshal([]*state.Record{rec(out)})
		if rows[i] != string(b) {
			t.Errorf("row %d is not its records (%d bytes, want %d)", i+1, len(rows[i]), len(b))
		}
	}
}
