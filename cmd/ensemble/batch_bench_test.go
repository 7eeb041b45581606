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

// batchEnsemble is three LLM agents in a chain, answered by injected
// responses: the batch benchmark's ensemble (docs/performance.md).
const batchEnsemble = `name: three
models: {m: {provider: openai, model: x, base_url: http://127.0.0.1:1}}
agents:
  - name: extract
    model_profile: m
  - name: analyse
    model_profile: m
    dependencies: [extract]
  - name: report
    model_profile: m
    dependencies: [analyse]
`

const batchResponses = `extract: [{facts: [a, b]}]
analyse: [{verdict: fine}]
report: ["All fine."]
`

// writeBatchFiles writes the benchmark's ensemble, responses and n inputs
// into dir; it returns the batch's arguments.
func writeBatchFiles(tb testing.TB, dir string, n int) []string {
	tb.Helper()
	var in strings.Builder
	for i := range n {
		fmt.Fprintf(&in, "{\"id\": \"doc-%d\", \"input\": \"document %d\"}\n", i, i)
	}
	for name, body := range map[string]string{"ensemble.yaml": batchEnsemble, "responses.yaml": batchResponses, "inputs.jsonl": in.String()} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			tb.Fatal(err)
		}
	}
	return []string{"batch", filepath.Join(dir, "ensemble.yaml"), "--responses", filepath.Join(dir, "responses.yaml"),
		"--inputs", filepath.Join(dir, "inputs.jsonl"), "--out", filepath.Join(dir, "results.jsonl")}
}

// BenchmarkBatch runs 1,000 inputs through a 3-agent ensemble with injected
// responses, in process, writing the results file: the whole command, from
// loading the files to the summary.
func BenchmarkBatch(b *testing.B) {
	for _, c := range []int{1, 4, 16} {
		b.Run(fmt.Sprintf("inputs=1000/concurrency=%d", c), func(b *testing.B) {
			args := append(writeBatchFiles(b, b.TempDir(), 1000), "--concurrency", fmt.Sprint(c))
			b.ReportAllocs()
			for b.Loop() {
				std := &stdio{in: strings.NewReader(""), out: io.Discard, err: io.Discard}
				if code := run(context.Background(), args, std); code != 0 {
					b.Fatalf("exit %d", code)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/1000, "ns/input")
		})
	}
	// With --state: every run saved turn by turn, and every line, in a new
	// state database each time.
	b.Run("inputs=1000/concurrency=4/state", func(b *testing.B) {
		dir := b.TempDir()
		args := writeBatchFiles(b, dir, 1000)
		n := 0
		b.ReportAllocs()
		for b.Loop() {
			n++
			a := append(args[:len(args):len(args)], "--state", filepath.Join(dir, fmt.Sprintf("runs%d.db", n)))
			std := &stdio{in: strings.NewReader(""), out: io.Discard, err: io.Discard}
			if code := run(context.Background(), a, std); code != 0 {
				b.Fatalf("exit %d", code)
			}
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/1000, "ns/input")
	})
}
