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
	"strings"
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
	if *out == "" {
		fmt.Fprintln(os.Stderr, "perfgen: -out DIR is required")
		os.Exit(2)
	}
	if err := os.MkdirAll(*out, 0o755); err != nil {
		fmt.Fprintln(os.Stderr, "perfgen:", err)
		os.Exit(1)
	}
	pad := strings.Repeat("x", *size)
	var err error
	switch *kind {
	case "loop":
		err = loop(*out, *turns, pad)
	case "dag":
		err = dag(*out, *agents, *width, pad)
	default:
		err = fmt.Errorf("unknown case %q", *kind)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "perfgen:", err)
		os.Exit(1)
	}
}

func write(dir, name string, fill func(w *bufio.Writer)) error {
	f, err := os.Create(filepath.Join(dir, name))
	if err != nil {
		return err
	}
	w := bufio.NewWriter(f)
	fill(w)
	if err := w.Flush(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

const profile = "models: {m: {provider: openai, model: x, base_url: http://127.0.0.1:1}}\n"

func loop(dir string, turns int, pad string) error {
	err := write(dir, "ensemble.yaml", func(w *bufio.Writer) {
		fmt.Fprintf(w, `name: ping-pong
%sagents:
  - name: start
    model_profile: m
  - name: ping
    model_profile: m
    dependencies:
      - start
      - {agent_name: pong, requires_all: false, condition: "context.pong.n < %[2]d"}
    conversation: {max_turns: %[2]d}
  - name: pong
    model_profile: m
    dependencies: [{agent_name: ping, condition: "executions.ping >= 1"}]
    conversation: {max_turns: %[2]d}
conversation_limits: {max_total_turns: %[3]d, timeout_seconds: 3600}
`, profile, turns, 2*turns+1)
	})
	if err != nil {
		return err
	}
	return write(dir, "responses.yaml", func(w *bufio.Writer) {
		w.WriteString("start: [go]\n")
		for _, name := range []string{"ping", "pong"} {
			fmt.Fprintf(w, "%s:\n", name)
			for i := range turns {
				fmt.Fprintf(w, "  - {n: %d, pad: %q}\n", i+1, pad)
			}
		}
	})
}

func dag(dir string, agents, width int, pad string) error {
	levels := (agents + width - 1) / width
	name := func(l, i int) string { return fmt.Sprintf("l%d_%d", l, i) }
	err := write(dir, "ensemble.yaml", func(w *bufio.Writer) {
		fmt.Fprintf(w, "name: dag\n%sagents:\n", profile)
		for l := range levels {
			for i := range min(width, agents-l*width) {
				fmt.Fprintf(w, "  - name: %s\n    model_profile: m\n", name(l, i))
				if l > 0 {
					w.WriteString("    dependencies: [")
					for j := range width {
						if j > 0 {
							w.WriteString(", ")
						}
						w.WriteString(name(l-1, j))
					}
					w.WriteString("]\n")
				}
			}
		}
		fmt.Fprintf(w, "conversation_limits: {parallel_agent_limit: %d, max_total_turns: %d, timeout_seconds: 3600}\n", width, levels+1)
	})
	if err != nil {
		return err
	}
	return write(dir, "responses.yaml", func(w *bufio.Writer) {
		for l := range levels {
			for i := range min(width, agents-l*width) {
				fmt.Fprintf(w, "%s: [{level: %d, pad: %q}]\n", name(l, i), l, pad)
			}
		}
	})
}
