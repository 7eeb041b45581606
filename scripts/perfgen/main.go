// Command perfgen writes the ensembles of docs/performance.md, with their
// injected responses, so that a run can be timed end to end:
//
//	go run ./scripts/perfgen -case loop -turns 16000 -out /tmp/loop
//	/usr/bin/time -v bin/ensemble run /tmp/loop/ensemble.yaml \
//	    --responses /tmp/loop/responses.yaml --output json > /dev/null
//
// Cases: "loop" is a ping-pong loop of two agents (2×turns executions, a
// condition on each edge); "dag" is agents/width levels of width agents,
// each depending on every agent of the level before (or on -deps of them); "scripts" is that DAG
// made of a trivial script, with the same work as a Taskfile for go-task
// and as a list of commands for xargs, to compare the three:
//
//	go run ./scripts/perfgen -case scripts -agents 200 -width 20 -out /tmp/s
//	cd /tmp/s && time ensemble run ensemble.yaml -q
//	time task --concurrency 2 all
//	time xargs -P2 -I{} sh -c {} < commands.txt
//
// "saved" is the loop, run once and saved in OUT/runs.db (the run the
// inspector's benchmark opens: 2×16,000 turns by default):
//
//	go run ./scripts/perfgen -case saved -turns 16000 -out /tmp/saved
//	bin/ensemble ui /tmp/saved/runs.db
package main

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/ensemble-run/ensemble/internal/benchdata"
)

func main() {
	var (
		kind   = flag.String("case", "loop", "loop, dag, scripts or saved")
		turns  = flag.Int("turns", 1000, "loop: executions of each agent")
		agents = flag.Int("agents", 1000, "dag: number of agents")
		width  = flag.Int("width", 50, "dag: agents per level")
		deps   = flag.Int("deps", 0, "dag: dependencies of each agent on the level before (0: the whole level)")
		size   = flag.Int("size", 0, "bytes of padding in each output")
		out    = flag.String("out", "", "directory to write ensemble.yaml and responses.yaml into")
	)
	flag.Parse()
	if *out == "" || (*kind != "loop" && *kind != "dag" && *kind != "scripts" && *kind != "saved") {
		fmt.Fprintln(os.Stderr, "usage: perfgen -case loop|dag|scripts|saved -out DIR [-turns N] [-agents N -width W] [-size BYTES]")
		os.Exit(2)
	}
	if *kind == "saved" {
		if err := os.MkdirAll(*out, 0o755); err != nil {
			fmt.Fprintln(os.Stderr, "perfgen:", err)
			os.Exit(1)
		}
		s, err := benchdata.SaveLoop(context.Background(), *out, *turns, *size)
		if err != nil {
			fmt.Fprintln(os.Stderr, "perfgen:", err)
			os.Exit(1)
		}
		fmt.Printf("run %s: %s after %d turns, saved in %s\n", s.ID, s.Reason, s.Turns, s.DB)
		return
	}
	if *kind == "scripts" {
		if err := scripts(*out, *agents, *width); err != nil {
			fmt.Fprintln(os.Stderr, "perfgen:", err)
			os.Exit(1)
		}
		return
	}
	if err := write(*out, func(ens, resp *bufio.Writer) {
		if *kind == "loop" {
			benchdata.Loop(ens, resp, *turns, *size)
		} else {
			d := *deps
			if d <= 0 {
				d = *width
			}
			benchdata.DAGEdges(ens, resp, *agents, *width, d, *size)
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

// scripts writes the DAG of trivial scripts three ways: an ensemble (two
// agents at a time), a Taskfile (go-task, --concurrency 2) and a list of
// commands (xargs -P2).
func scripts(dir string, agents, width int) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	step := "#!/bin/sh\ncat > /dev/null\necho '{\"ok\": true}'\n"
	if err := os.WriteFile(filepath.Join(dir, "step.sh"), []byte(step), 0o755); err != nil {
		return err
	}
	levels := (agents + width - 1) / width
	name := func(l, i int) string { return fmt.Sprintf("l%d_%d", l, i) }
	var ens, task, cmds strings.Builder
	ens.WriteString("name: scripts\nagents:\n")
	task.WriteString("version: '3'\ntasks:\n")
	var all []string
	for l := range levels {
		for i := range min(width, agents-l*width) {
			var deps []string
			if l > 0 {
				for j := range width {
					deps = append(deps, name(l-1, j))
				}
			}
			fmt.Fprintf(&ens, "  - {name: %s, script: step.sh, dependencies: [%s]}\n", name(l, i), strings.Join(deps, ", "))
			fmt.Fprintf(&task, "  %s:\n    run: once\n    deps: [%s]\n    cmds: ['./step.sh < /dev/null > /dev/null']\n", name(l, i), strings.Join(deps, ", "))
			cmds.WriteString("./step.sh < /dev/null > /dev/null\n")
			if l == levels-1 {
				all = append(all, name(l, i))
			}
		}
	}
	fmt.Fprintf(&ens, "conversation_limits: {parallel_agent_limit: 2, max_total_turns: %d}\n", levels+1)
	fmt.Fprintf(&task, "  all:\n    deps: [%s]\n", strings.Join(all, ", "))
	for name, body := range map[string]string{"ensemble.yaml": ens.String(), "Taskfile.yml": task.String(), "commands.txt": cmds.String()} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			return err
		}
	}
	return nil
}
