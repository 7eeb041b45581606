package report

import (
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/ensemble-run/ensemble/engine"
)

// endings explain the completion reasons that a person may not expect, and
// what to do about them.
var endings = map[string]string{
	engine.MaxTotalTurns: "agents were still ready when the turn limit was reached: raise conversation_limits.max_total_turns or pass --max-turns",
	engine.Timeout:       "the run's timeout passed and running agents were cancelled: raise conversation_limits.timeout_seconds or pass --timeout",
	engine.Cancelled:     "interrupted; a run started with --state FILE goes on with: ensemble resume FILE",
}

// Summary writes the end of a run for a person: how it ended, a table of the
// agents (runs, failures, time, usage), errors, warnings and the final
// state. agents is the ensemble's agents in file order (nil: the order they
// first ran); those that never ran are listed with 0 runs.
func Summary(w io.Writer, res *engine.Result, agents []string) {
	fmt.Fprintf(w, "\n%s: %s after %s in %s\n", res.Ensemble, res.CompletionReason, plural(res.TurnCount, "turn"), Seconds(res.DurationSeconds))
	if why := endings[res.CompletionReason]; why != "" {
		fmt.Fprintf(w, "  (%s)\n", why)
	}
	stats := Stats(res, agents)
	llm := res.Usage.Requests > 0
	if len(stats) > 0 {
		// The time column is at least as wide as any Seconds up to 99
		// hours, so that it keeps its width from run to run.
		header := []string{"agent", "runs", "failed", fmt.Sprintf("%6s", "time")}
		if llm {
			header = append(header, "requests", "in tokens", "out tokens")
		}
		rows := [][]string{header}
		for _, s := range stats {
			row := []string{s.Name, fmt.Sprint(s.Runs), dash(s.Failures), timeCell(s)}
			if llm {
				row = append(row, dash(s.Usage.Requests), dash(s.Usage.InputTokens), dash(s.Usage.OutputTokens))
			}
			rows = append(rows, row)
		}
		table(w, "  ", rows)
	}
	if llm {
		fmt.Fprintf(w, "usage: %s\n", usageText(res.Usage))
	}
	for _, e := range res.Errors {
		who := e.AgentName
		if who == "" {
			who = "run"
		}
		fmt.Fprintf(w, "error: turn %d, %s: %s\n", e.TurnNumber, who, e.Message)
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
		slices.Sort(keys)
		for _, k := range keys {
			fmt.Fprintf(w, "  %s: %s\n", k, Preview(res.FinalState[k], 100))
		}
	}
}

func dash(n int) string {
	if n == 0 {
		return "-"
	}
	return thousands(n)
}

func timeCell(s *AgentStats) string {
	if s.Runs == 0 {
		return "-"
	}
	return Seconds(s.Seconds)
}

// table writes rows as aligned columns: the first flush left, the others
// flush right, two spaces apart.
func table(w io.Writer, indent string, rows [][]string) {
	var widths []int
	for _, r := range rows {
		for i, c := range r {
			if i >= len(widths) {
				widths = append(widths, 0)
			}
			widths[i] = max(widths[i], len([]rune(c)))
		}
	}
	for _, r := range rows {
		var b strings.Builder
		b.WriteString(indent)
		for i, c := range r {
			pad := strings.Repeat(" ", widths[i]-len([]rune(c)))
			if i == 0 {
				b.WriteString(c + pad)
			} else {
				b.WriteString("  " + pad + c)
			}
		}
		fmt.Fprintln(w, b.String())
	}
}
