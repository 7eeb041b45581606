// Package report renders a run for people: the live or plain text progress
// of `ensemble run --output text`, the summary at its end, and the Markdown
// transcript of `--report FILE.md`.
package report

import (
	"bytes"
	"encoding/json"
	"fmt"
	"html"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/ensemble-run/ensemble/engine"
	"github.com/ensemble-run/ensemble/internal/jsonvalue"
	"github.com/ensemble-run/ensemble/state"
)

// Seconds formats a duration given in seconds: 0.05s, 12.30s, 2m05s, 1h02m.
func Seconds(s float64) string {
	switch {
	case s < 0 || math.IsNaN(s):
		return "0.00s"
	case s < 60:
		return fmt.Sprintf("%.2fs", s)
	case s < 3600:
		return fmt.Sprintf("%dm%02ds", int(s)/60, int(s)%60)
	}
	return fmt.Sprintf("%dh%02dm", int(s)/3600, int(s)%3600/60)
}

// elapsed formats a running clock with one decimal: 3.2s, 1m05s.
func elapsed(d time.Duration) string {
	s := d.Seconds()
	if s < 60 {
		return fmt.Sprintf("%.1fs", max(s, 0))
	}
	return Seconds(s)
}

// Preview renders a value on one line, cut to n runes: strings as they are,
// anything else as compact JSON.
func Preview(v any, n int) string {
	s, ok := v.(string)
	if !ok {
		s = jsonvalue.Compact(v)
	}
	return Truncate(oneLine(s), n)
}

// Truncate cuts s to n runes, ending with … when it was longer; control
// characters are made visible first (TerminalSafe).
func Truncate(s string, n int) string {
	if n <= 0 {
		return ""
	}
	s = TerminalSafe(s)
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n-1]) + "…"
}

func indentJSON(v any) string {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		return fmt.Sprint(v)
	}
	return strings.TrimSuffix(b.String(), "\n")
}

// AgentStats sums one agent's executions.
type AgentStats struct {
	Name      string
	Runs      int
	Failures  int
	Seconds   float64 // execution time, summed
	Usage     state.Usage
	ToolCalls int // filled in by the report, which sees the events
	// Instances and InstanceFailures count the agent's fan-out instances
	// (fanout.go); their usage is in Usage.
	Instances, InstanceFailures int
	// Skips counts the times the agent was skipped instead of run
	// (docs/semantics.md#guards-that-skip): not runs.
	Skips int
}

// Stats sums the history per agent. Agents come in the order of names (the
// ensemble's agents, which may be nil), then in the order they first ran;
// agents of names that never ran are included with zero runs.
func Stats(res *engine.Result, names []string) []*AgentStats {
	var out []*AgentStats
	byName := map[string]*AgentStats{}
	add := func(name string) *AgentStats {
		if s := byName[name]; s != nil {
			return s
		}
		s := &AgentStats{Name: name}
		byName[name] = s
		out = append(out, s)
		return s
	}
	for _, n := range names {
		add(n)
	}
	for _, rec := range res.ConversationHistory {
		if rec.Of != "" {
			add(rec.Of).addInstance(rec)
			continue
		}
		s := add(rec.AgentName)
		if rec.Skipped {
			s.Skips++
			continue
		}
		s.Runs++
		if rec.Error != nil {
			s.Failures++
		}
		s.Seconds += rec.ExecutionTime
		s.Usage.Add(rec.Usage)
	}
	// The result's spend per agent also counts the executions of a turn
	// that was cut short (their requests were made).
	for name, u := range res.UsageByAgent {
		if u != nil {
			add(name).Usage = *u
		}
	}
	// Executions counted but not in the history (a resumed run's state is
	// complete, so this only guards against hand-made results).
	var rest []string
	for n := range res.AgentExecutionCount {
		if byName[n] == nil {
			rest = append(rest, n)
		}
	}
	slices.Sort(rest)
	for _, n := range rest {
		add(n).Runs = res.AgentExecutionCount[n]
	}
	return out
}

// usageText is "3 requests, 1200 input tokens, 310 output tokens".
func usageText(u state.Usage) string {
	s := fmt.Sprintf("%s, %s input tokens, %s output tokens", Count(u.Requests, "request"), thousands(u.InputTokens), thousands(u.OutputTokens))
	if u.Cost > 0 {
		s += ", cost " + costCell(u.Cost)
	}
	return s
}

// UsageText is u as the summary says it: "3 requests, 1,200 input tokens,
// 310 output tokens" (and the cost when priced).
func UsageText(u state.Usage) string { return usageText(u) }

// costCell is a cost, in the unit of the profiles' pricing: "0.0123", "-"
// when nothing.
func costCell(c float64) string {
	if c <= 0 {
		return "-"
	}
	return strconv.FormatFloat(c, 'g', 6, 64)
}

// Count is n and word, in the plural unless n is 1: "1 turn", "2 turns",
// "1,200 requests".
func Count(n int, word string) string {
	if n == 1 {
		return "1 " + word
	}
	return thousands(n) + " " + word + "s"
}

// thousands writes n with thin groups: 1,234,567.
func thousands(n int) string {
	s := fmt.Sprint(n)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var b strings.Builder
	for i, r := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(r)
	}
	if neg {
		return "-" + b.String()
	}
	return b.String()
}

// --- Markdown ---

// fence returns a fenced code block holding s: the fence is longer than any
// run of backticks in s, so nothing in s can end it.
func fence(lang, s string) string {
	n := max(3, longestRun(s, '`')+1)
	f := strings.Repeat("`", n)
	return f + lang + "\n" + strings.TrimRight(s, "\n") + "\n" + f + "\n"
}

// code returns s as inline code, whatever backticks it holds; on one line.
func code(s string) string {
	s = oneLine(s)
	if s == "" {
		return "` `"
	}
	f := strings.Repeat("`", longestRun(s, '`')+1)
	if strings.HasPrefix(s, "`") || strings.HasSuffix(s, "`") {
		s = " " + s + " "
	}
	return f + s + f
}

func longestRun(s string, c rune) int {
	best, cur := 0, 0
	for _, r := range s {
		if r == c {
			cur++
			best = max(best, cur)
		} else {
			cur = 0
		}
	}
	return best
}

// inline escapes text for running Markdown and table cells: HTML is
// neutralised and characters that would start markup (pipes included) are
// backslash-escaped; lines are joined.
func inline(s string) string {
	s = oneLine(s)
	var b strings.Builder
	for _, r := range s {
		switch r {
		case '\\', '`', '*', '_', '[', ']', '#', '~', '|':
			b.WriteByte('\\')
			b.WriteRune(r)
		case '<':
			b.WriteString("&lt;")
		case '>':
			b.WriteString("&gt;")
		case '&':
			b.WriteString("&amp;")
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

// summaryText escapes text for an HTML <summary>.
func summaryText(s string) string { return html.EscapeString(oneLine(s)) }

// oneLine joins the lines of s with spaces.
func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }
