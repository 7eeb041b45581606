package store_test

import (
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/ensemble-run/ensemble/state"
	"github.com/ensemble-run/ensemble/store"
)

// BenchmarkStoreTurn measures what a save costs per turn in a ping-pong of
// turns turns (one record, its counts, output, edge and the turn count a
// turn): the ns/turn metric must not grow with the run (docs/performance.md).
func BenchmarkStoreTurn(b *testing.B) {
	for _, turns := range []int{1000, 8000} {
		b.Run(fmt.Sprint(turns), func(b *testing.B) {
			var total time.Duration
			n := 0
			for b.Loop() {
				b.StopTimer()
				db, err := store.Open(filepath.Join(b.TempDir(), "bench.db"), true, "")
				if err != nil {
					b.Fatal(err)
				}
				st := state.New("go")
				f := &state.File{Ensemble: state.FileRef{Name: "bench", Path: "/bench.yaml", SHA256: fmt.Sprintf("%064x", 1)}, State: st}
				w, err := db.Create("bench", f, func(s string) string { return s })
				if err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
				start := time.Now()
				for turn := 1; turn <= turns; turn++ {
					pingPongTurn(st, turn, map[string]any{"n": float64(turn)})
					if err := w.SaveTurn(st); err != nil {
						b.Fatal(err)
					}
				}
				total += time.Since(start)
				n += turns
				b.StopTimer()
				w.Close()
				db.Close()
				b.StartTimer()
			}
			b.ReportMetric(float64(total.Nanoseconds())/float64(n), "ns/turn")
		})
	}
}

// pingPongTurn plays turn of a loop of two agents, ping and pong, on st:
// the agent whose turn it is consumes the other's output and outputs out,
// as the engine's committer records it.
func pingPongTurn(st *state.State, turn int, out map[string]any) {
	agent, other := "ping", "pong"
	if turn%2 == 0 {
		agent, other = "pong", "ping"
	}
	st.EdgeForUpdate(agent, other).Consumed = st.OutputCount[other]
	st.AgentExecutionCount[agent]++
	st.OutputCount[agent]++
	st.AccumulatedContext[agent] = out
	st.AppendRecord(&state.Record{TurnNumber: turn, AgentName: agent, Execution: st.AgentExecutionCount[agent],
		OutputData: out, Timestamp: time.Now().UTC()})
	st.TurnCount = turn
}
