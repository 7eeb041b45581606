package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
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

// BenchmarkCLIDAG1000 is the end-to-end target of a 1,000-agent DAG (20
// levels of 50, each agent depending on the whole level before) with
// injected responses: load, validate, run, print the JSON result. < 1 s.
func BenchmarkCLIDAG1000(b *testing.B) {
	var ens, resp strings.Builder
	ens.WriteString("name: dag\nmodels: {m: {provider: openai, model: x, base_url: http://127.0.0.1:1}}\nagents:\n")
	for level := range 20 {
		for i := range 50 {
			fmt.Fprintf(&ens, "  - name: l%d_%d\n    model_profile: m\n", level, i)
			if level > 0 {
				ens.WriteString("    dependencies: [")
				for j := range 50 {
					if j > 0 {
						ens.WriteString(", ")
					}
					fmt.Fprintf(&ens, "l%d_%d", level-1, j)
				}
				ens.WriteString("]\n")
			}
			fmt.Fprintf(&resp, "l%d_%d: [{level: %d}]\n", level, i, level)
		}
	}
	ens.WriteString("conversation_limits: {parallel_agent_limit: 50}\n")
	benchCLI(b, writeBench(b, b.TempDir(), ens.String(), resp.String()), 0)
}

// BenchmarkCLILoop is the end-to-end target of a two-agent loop of 2×4,000
// turns with conditions on its edges. < 2 s.
func BenchmarkCLILoop(b *testing.B) {
	ens, resp := loopFiles(4000)
	benchCLI(b, writeBench(b, b.TempDir(), ens, resp), 0)
}

// loopFiles is the ensemble and the responses of a writer/reviewer loop of
// 2×turns turns.
func loopFiles(turns int) (ens, responses string) {
	ens = fmt.Sprintf(`name: loop
models: {m: {provider: openai, model: x, base_url: http://127.0.0.1:1}}
agents:
  - name: writer
    model_profile: m
    dependencies:
      - start
      - {agent_name: reviewer, requires_all: false, condition: "context.reviewer?.approved != true"}
    conversation: {max_turns: %[1]d}
  - name: reviewer
    model_profile: m
    dependencies: [{agent_name: writer, condition: "executions.writer >= 1"}]
    conversation: {max_turns: %[1]d}
  - name: start
    model_profile: m
conversation_limits: {max_total_turns: %[2]d}
`, turns, 2*turns+1)
	var resp strings.Builder
	resp.WriteString("start: [go]\nwriter:\n")
	for i := range turns {
		fmt.Fprintf(&resp, "  - {draft: %d}\n", i)
	}
	resp.WriteString("reviewer:\n")
	for i := range turns {
		fmt.Fprintf(&resp, "  - {approved: %t}\n", i == turns-1)
	}
	return ens, resp.String()
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
				ens, resp := loopFiles(turns)
				args := writeBench(b, dir, ens, resp)
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
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(2*turns+1), "ns/turn")
			})
		}
	}
}
