// Package benchdata writes the ensembles of the performance table
// (docs/performance.md), with their injected responses: the same files for
// the Go benchmarks and for timing the binary by hand (scripts/perfgen).
package benchdata

import (
	"fmt"
	"io"
	"strings"
)

const profile = "models: {m: {provider: openai, model: x, base_url: http://127.0.0.1:1}}\n"

// Loop writes a ping-pong loop: start, then ping and pong alternating, each
// executed turns times (2×turns+1 turns), with a condition on each edge.
// Every output carries pad bytes of padding.
func Loop(ens, responses io.Writer, turns, pad int) {
	fmt.Fprintf(ens, `name: ping-pong
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
	p := strings.Repeat("x", pad)
	io.WriteString(responses, "start: [go]\n")
	for _, name := range []string{"ping", "pong"} {
		fmt.Fprintf(responses, "%s:\n", name)
		for i := range turns {
			fmt.Fprintf(responses, "  - {n: %d, pad: %q}\n", i+1, p)
		}
	}
}

// LoopTurns is the number of turns of Loop(turns).
func LoopTurns(turns int) int { return 2*turns + 1 }

// DAG writes agents agents in levels of width, each depending on every agent
// of the level before.
func DAG(ens, responses io.Writer, agents, width, pad int) {
	DAGEdges(ens, responses, agents, width, width, pad)
}

// DAGEdges writes agents agents in levels of width, each depending on deps
// agents of the level before (at most width): agent i of a level on agents
// i, i+1, … i+deps-1 (modulo width) of the level before.
func DAGEdges(ens, responses io.Writer, agents, width, deps, pad int) {
	deps = max(1, min(deps, width))
	levels := (agents + width - 1) / width
	name := func(l, i int) string { return fmt.Sprintf("l%d_%d", l, i) }
	fmt.Fprintf(ens, "name: dag\n%sagents:\n", profile)
	for l := range levels {
		for i := range min(width, agents-l*width) {
			fmt.Fprintf(ens, "  - name: %s\n    model_profile: m\n", name(l, i))
			if l > 0 {
				io.WriteString(ens, "    dependencies: [")
				for j := range deps {
					if j > 0 {
						io.WriteString(ens, ", ")
					}
					io.WriteString(ens, name(l-1, (i+j)%width))
				}
				io.WriteString(ens, "]\n")
			}
		}
	}
	fmt.Fprintf(ens, "conversation_limits: {parallel_agent_limit: %d, max_total_turns: %d, timeout_seconds: 3600}\n", width, levels+1)
	p := strings.Repeat("x", pad)
	for l := range levels {
		for i := range min(width, agents-l*width) {
			fmt.Fprintf(responses, "%s: [{level: %d, pad: %q}]\n", name(l, i), l, p)
		}
	}
}
