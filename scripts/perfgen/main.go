// Command perfgen writes the ensembles of docs/performance.md, with their
// injected responses, so that a run can be timed end to end:
//
//	go run ./scripts/perfgen -case loop -turns 16000 -out /tmp/loop
//	/usr/bin/time -v bin/ensemble run /tmp/loop/ensemble.yaml \
//	    --responses /tmp/loop/responses.yaml --output json > /dev/null
//
// Cases: "loop" is a ping-pong loop of two agents (2×turns executions, a
// condition on each edge); "dag" is agents/width levels of width agents,
// each depending on every agent of the level before.
package main

import (
	"bufio"
	"flag"
	"fmt"
	"os"
	"path/filepath"

	"github.com/ensemble-run/ensemble/internal/benchdata"
)

func main() {
	var (
		kind   = flag.String("case", "loop", "loop or dag")
		turns  = flag.Int("turns", 1000, "loop: executions of each agent")
		agents = flag.Int("agents", 1000, "dag: number of agents")
		width  = flag.Int("width", 50, "dag: agents per level")
		size   = flag.Int("size", 0, "bytes of padding in each output")
		out    = flag.String("out", "", "directory to write ensemble.yaml and responses.yaml into")
	)
	flag.Parse()
	if *out == "" || (*kind != "loop" && *kind != "dag") {
		fmt.Fprintln(os.Stderr, "usage: perfgen -case loop|dag -out DIR [-turns N] [-agents N -width W] [-size BYTES]")
		os.Exit(2)
	}
	if err := write(*out, func(ens, resp *bufio.Writer) {
		if *kind == "loop" {
			benchdata.Loop(ens, resp, *turns, *size)
		} else {
			benchdata.DAG(ens, resp, *agents, *width, *size)
		}
	}); err != nil {
		fmt.Fprintln(os.Stderr, "perfgen:", err)
		os.Exit(1)
	}
}

func write(dir string, fill func(ens, resp *bufio.Writer)) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	var files [2]*os.File
	var ws [2]*bufio.Writer
	for i, name := range []string{"ensemble.yaml", "responses.yaml"} {
		f, err := os.Create(filepath.Join(dir, name))
		if err != nil {
			return err
		}
		defer f.Close()
		files[i], ws[i] = f, bufio.NewWriter(f)
	}
	fill(ws[0], ws[1])
	for i := range files {
		if err := ws[i].Flush(); err != nil {
			return err
		}
		if err := files[i].Close(); err != nil {
			return err
		}
	}
	return nil
}
