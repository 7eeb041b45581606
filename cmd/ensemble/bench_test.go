package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ensemble-run/ensemble/internal/benchdata"
)

// writeBench writes an ensemble and its responses file into dir.
func writeBench(b *testing.B, dir, ens, responses string) []string {
	b.Helper()
	for name, body := range map[string]string{"ensemble.yaml": ens, "responses.yaml": responses} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			b.Fatal(err)
		}
	}
	return []string{"run", filepath.Join(dir, "ensemble.yaml"), "--responses", filepath.Join(dir, "responses.yaml"), "--output", "json"}
}

func benchCLI(b *testing.B, args []string, wantCode int) {
	b.ReportAllocs()
	for b.Loop() {
		std := &stdio{in: strings.NewReader(""), out: io.Discard, err: io.Discard}
		if code := run(context.Background(), args, std); code != wantCode {
			b.Fatalf("exit %d", code)
		}
	}
}

// The end-to-end rows of the performance table (docs/performance.md): load,
// validate, run with injected responses and print the JSON result, in
// process. The same files are written by scripts/perfgen for timing the
// binary.

// BenchmarkCLIDAG runs DAGs of 1,000 and 20,000 agents, 50 per level, each
// depending on the whole level before (dense) or on 2 agents of it
// (sparse).
func BenchmarkCLIDAG(b *testing.B) {
	for _, n := range []int{1000, 20000} {
		for _, deps := range []int{50, 2} {
			name := fmt.Sprint(n)
			if deps < 50 {
				name += "/sparse"
			}
			b.Run(name, func(b *testing.B) {
				var ens, resp strings.Builder
				benchdata.DAGEdges(&ens, &resp, n, 50, deps, 0)
				benchCLI(b, writeBench(b, b.TempDir(), ens.String(), resp.String()), 0)
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(n), "ns/agent")
			})
		}
	}
}

// BenchmarkCLILoop runs the ping-pong loop of 2×1,000 to 2×32,000 turns:
// ns/turn must stay flat.
func BenchmarkCLILoop(b *testing.B) {
	for _, turns := range []int{1000, 4000, 16000, 32000} {
		b.Run(fmt.Sprintf("2x%d", turns), func(b *testing.B) {
			var ens, resp strings.Builder
			benchdata.Loop(&ens, &resp, turns, 0)
			benchCLI(b, writeBench(b, b.TempDir(), ens.String(), resp.String()), 0)
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(benchdata.LoopTurns(turns)), "ns/turn")
		})
	}
}

// The benchmarks' ensembles load and run as the table says: the loop takes
// 2×turns+1 turns and completes, the DAG runs every agent once.
func TestBenchdataEnsemblesRun(t *testing.T) {
	t.Parallel()
	for name, c := range map[string]struct {
		fill         func(ens, resp *strings.Builder)
		turns, execs int
	}{
		"loop": {func(e, r *strings.Builder) { benchdata.Loop(e, r, 3, 10) }, benchdata.LoopTurns(3), 7},
		"dag":  {func(e, r *strings.Builder) { benchdata.DAG(e, r, 100, 10, 0) }, 10, 100},
	} {
		var ens, resp strings.Builder
		c.fill(&ens, &resp)
		dir := t.TempDir()
		for file, body := range map[string]string{"ensemble.yaml": ens.String(), "responses.yaml": resp.String()} {
			if err := os.WriteFile(filepath.Join(dir, file), []byte(body), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		var out strings.Builder
		std := &stdio{in: strings.NewReader(""), out: &out, err: io.Discard}
		args := []string{"run", filepath.Join(dir, "ensemble.yaml"), "--responses", filepath.Join(dir, "responses.yaml"), "--output", "json"}
		if code := run(context.Background(), args, std); code != 0 {
			t.Fatalf("%s: exit %d", name, code)
		}
		var res struct {
			CompletionReason    string `json:"completion_reason"`
			TurnCount           int    `json:"turn_count"`
			ConversationHistory []any  `json:"conversation_history"`
		}
		if err := json.Unmarshal([]byte(out.String()), &res); err != nil {
			t.Fatal(err)
		}
		if res.CompletionReason != "completed" || res.TurnCount != c.turns || len(res.ConversationHistory) != c.execs {
			t.Errorf("%s: %s after %d turns, %d executions; want completed after %d, %d", name, res.CompletionReason, res.TurnCount, len(res.ConversationHistory), c.turns, c.execs)
		}
	}
}

// BenchmarkCLILoopState is the loop of BenchmarkCLILoop with and without
// --state (a new state database each run), at 2×500 and 2×4,000 turns: the
// ns/turn of the store must not grow with the run, and the run with --state
// costs at most 3× the run without (docs/performance.md).
func BenchmarkCLILoopState(b *testing.B) {
	for _, turns := range []int{500, 4000} {
		for _, withState := range []bool{false, true} {
			name := fmt.Sprintf("turns=%d/state=%t", 2*turns, withState)
			b.Run(name, func(b *testing.B) {
				dir := b.TempDir()
				var ens, resp strings.Builder
				benchdata.Loop(&ens, &resp, turns, 0)
				args := writeBench(b, dir, ens.String(), resp.String())
				n := 0
				b.ReportAllocs()
				for b.Loop() {
					a := args
					if withState {
						n++
						a = append(args[:len(args):len(args)], "--state", filepath.Join(dir, fmt.Sprintf("run%d.db", n)))
					}
					std := &stdio{in: strings.NewReader(""), out: io.Discard, err: io.Discard}
					if code := run(context.Background(), a, std); code != 0 {
						b.Fatalf("exit %d", code)
					}
				}
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(benchdata.LoopTurns(turns)), "ns/turn")
			})
		}
	}
}
