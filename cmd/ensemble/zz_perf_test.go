package main

import (
	"context"
	"io"
	"os"
	"strings"
	"testing"
)

func BenchmarkPerfDir(b *testing.B) {
	dir := os.Getenv("PERF_DIR")
	if dir == "" {
		b.Skip()
	}
	args := []string{"run", dir + "/ensemble.yaml", "--responses", dir + "/responses.yaml", "--output", "json"}
	for b.Loop() {
		std := &stdio{in: strings.NewReader(""), out: io.Discard, err: io.Discard}
		run(context.Background(), args, std)
	}
}
