package main

import (
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strings"
	"sync"

	"github.com/ensemble-run/ensemble/engine"
	"github.com/ensemble-run/ensemble/events"
)

// textProgress prints a line per turn and per finished agent.
type textProgress struct {
	mu sync.Mutex
	w  io.Writer
}

func newTextProgress(w io.Writer) *textProgress { return &textProgress{w: w} }

func (p *textProgress) event(ev events.Event) {
	p.mu.Lock()
	defer p.mu.Unlock()
	switch ev.Type {
	case events.TurnStarted:
		fmt.Fprintf(p.w, "turn %d: %s\n", ev.Turn, strings.Join(ev.Agents, ", "))
	case events.AgentCompleted:
		fmt.Fprintf(p.w, "  ✓ %s (%.2fs) %s\n", ev.Agent, ev.Duration, preview(ev.Output, 70))
		if ev.Error != "" {
			fmt.Fprintf(p.w, "    error: %s\n", ev.Error)
		}
	case events.AgentFailed:
		fmt.Fprintf(p.w, "  ✗ %s (%.2fs) %s\n", ev.Agent, ev.Duration, ev.Error)
	case events.ToolCallStarted:
		fmt.Fprintf(p.w, "    → %s %s\n", ev.Tool, truncate(ev.Arguments, 60))
	case events.Warning:
		fmt.Fprintf(p.w, "  ! %s\n", ev.Message)
	}
}

// preview renders an output on one line, cut to n runes.
func preview(v any, n int) string {
	s, ok := v.(string)
	if !ok {
		b, _ := json.Marshal(v)
		s = string(b)
	}
	return truncate(strings.Join(strings.Fields(s), " "), n)
}

func truncate(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n-1]) + "…"
}

// printSummary prints the end of a run for a person.
func printSummary(w io.Writer, res *engine.Result) {
	fmt.Fprintf(w, "\n%s: %s after %d turns in %.2fs\n", res.Ensemble, res.CompletionReason, res.TurnCount, res.DurationSeconds)
	names := make([]string, 0, len(res.AgentExecutionCount))
	for n := range res.AgentExecutionCount {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		fmt.Fprintf(w, "  %-24s ran %d×\n", n, res.AgentExecutionCount[n])
	}
	if u := res.Usage; u.Requests > 0 {
		fmt.Fprintf(w, "usage: %d requests, %d input tokens, %d output tokens\n", u.Requests, u.InputTokens, u.OutputTokens)
	}
	for _, e := range res.Errors {
		fmt.Fprintf(w, "error: turn %d, %s: %s\n", e.TurnNumber, e.AgentName, e.Message)
	}
	for _, wn := range res.Warnings {
		fmt.Fprintf(w, "warning: turn %d, %s\n", wn.TurnNumber, wn.Message)
	}
	if len(res.FinalState) > 0 {
		fmt.Fprintln(w, "final state:")
		keys := make([]string, 0, len(res.FinalState))
		for k := range res.FinalState {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			fmt.Fprintf(w, "  %s: %s\n", k, preview(res.FinalState[k], 100))
		}
	}
}
