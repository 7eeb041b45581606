package report

import (
	"fmt"
	"io"
	"math"
	"slices"
	"strings"

	"github.com/ensemble-run/ensemble/engine"
	"github.com/ensemble-run/ensemble/internal/jsonvalue"
)

// endings explain the completion reasons that a person may not expect, and
// what to do about them.
var endings = map[string]string{
	engine.MaxTotalTurns: "agents were still ready when the turn limit was reached: raise conversation_limits.max_total_turns or pass --max-turns",
	engine.Timeout:       "the run's timeout passed and running agents were cancelled: raise conversation_limits.timeout_seconds or pass --timeout",
	engine.AwaitingInput: "ask agents wait for answers: give them to resume with --answer AGENT=TEXT",
	engine.BudgetExceeded: "a model request was refused because a budget was spent, and running agents were cancelled: " +
		"raise the cap in the file, or resume with --max-cost, --max-tokens or --max-requests",
	engine.ExpectationFailed: "the run completed, but an expectation of its final state does not hold",
	engine.StrictWarning: "--strict: an expression read a key its value does not have (see the warnings): " +
		"correct the name, or write ?. or ?? where the key may be absent",
}

// SummaryOptions tune a Summary.
type SummaryOptions struct {
	// Agents are the ensemble's agents in file order (nil: the order they
	// first ran); those that never ran are listed with 0 runs.
	Agents []string
	// Width is the terminal's width in columns: the table is fitted to it
	// and the lines are broken at spaces. ≤ 0 means no terminal: lines are
	// not broken, and previews are cut at 100 runes.
	Width int
	// Resume is the command that continues this run ("" when the run has
	// no state file); an interrupted run names it.
	Resume string
	// Quiet prints the final state only: it is the run's result.
	Quiet bool
	// Output is the agent the ensemble's output: names ("": none): a
	// result without an output then says that it has none.
	Output string
}

// shownFailures is how many failed executions the headline names.
const shownFailures = 3

// Summary writes the end of a run for a person: how it ended, a table of the
// agents (runs, failures, time, usage), errors, warnings, the ensemble's
// output (when its file names an output: agent) and the final state.
func Summary(w io.Writer, res *engine.Result, opts SummaryOptions) {
	w = TerminalWriter(w) // values, warnings and errors come from models and scripts
	width := opts.Width
	if width <= 0 {
		width = math.MaxInt
	}
	if !opts.Quiet {
		summaryHead(w, res, opts, width)
	}
	switch {
	case res.Output != nil && opts.Quiet:
		fmt.Fprintf(w, "output: %s\n", whole(res.Output))
	case res.Output != nil:
		fmt.Fprintf(w, "output: %s\n", Preview(res.Output, min(100, max(10, width-len("output: ")))))
	case opts.Output != "":
		fmt.Fprintf(w, "output: none (%q, the ensemble's output agent, has no output)\n", opts.Output)
	}
	if len(res.FinalState) > 0 {
		fmt.Fprintln(w, "final state:")
		keys := make([]string, 0, len(res.FinalState))
		for k := range res.FinalState {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
			if opts.Quiet { // the result itself: whole values
				fmt.Fprintf(w, "  %s: %s\n", k, whole(res.FinalState[k]))
				continue
			}
			// "  key: " and the preview fill the line, up to 100 runes of
			// preview, and never fewer than 10.
			n := min(100, max(10, width-len([]rune(k))-4))
			fmt.Fprintf(w, "  %s: %s\n", k, Preview(res.FinalState[k], n))
		}
	}
}

// whole is a value of the final state as -q prints it, uncut: a string as
// it is, its further lines indented under the key, anything else as
// compact JSON.
func whole(v any) string {
	s, ok := v.(string)
	if !ok {
		return jsonvalue.Compact(v)
	}
	return strings.ReplaceAll(s, "\n", "\n    ")
}

func summaryHead(w io.Writer, res *engine.Result, opts SummaryOptions, width int) {
	fmt.Fprintln(w)
	paragraph(w, "", "  ", res.Ensemble+": "+headline(res), width)
	if why := ending(res.CompletionReason, opts.Resume); why != "" {
		paragraph(w, "  ", "   ", "("+why+")", width)
	}
	stats := Stats(res, opts.Agents)
	llm := res.Usage.Requests > 0
	if len(stats) > 0 {
		// The time column is at least as wide as any Seconds up to 99
		// hours, so that it keeps its width from run to run.
		header := []string{"agent", "runs", "failed"}
		// Fan-out instances get columns of their own (instanceColumns),
		// so that the runs of every agent stay one aligned number.
		fanned, failedInstances := instanceColumns(stats)
		skips := slices.ContainsFunc(stats, func(s *AgentStats) bool { return s.Skips > 0 })
		if skips {
			header = append(header, "skipped")
		}
		if fanned {
			header = append(header, "instances")
		}
		if failedInstances {
			header = append(header, "failed instances")
		}
		header = append(header, fmt.Sprintf("%6s", "time"))
		runCols := len(header)
		if llm {
			header = append(header, "requests", "in tokens", "out tokens")
		}
		priced := res.Usage.Cost > 0
		if priced {
			header = append(header, "cost")
		}
		rows := [][]string{header}
		for _, s := range stats {
			row := []string{s.Name, fmt.Sprint(s.Runs), dash(s.Failures)}
			if skips {
				row = append(row, dash(s.Skips))
			}
			if fanned {
				row = append(row, dash(s.Instances))
			}
			if failedInstances {
				row = append(row, dash(s.InstanceFailures))
			}
			row = append(row, timeCell(s))
			if llm {
				row = append(row, dash(s.Usage.Requests), dash(s.Usage.InputTokens), dash(s.Usage.OutputTokens))
			}
			if priced {
				row = append(row, costCell(s.Usage.Cost))
			}
			rows = append(rows, row)
		}
		if _, ok := fit(rows, indent, width); ok || !llm {
			table(w, rows, width)
		} else {
			// Too narrow for one table: the usage gets a table of its own.
			var runs, usage [][]string
			for _, r := range rows {
				runs = append(runs, r[:runCols])
				usage = append(usage, append([]string{r[0]}, r[runCols:]...))
			}
			table(w, runs, width)
			table(w, usage, width)
		}
	}
	if llm {
		paragraph(w, "", "  ", "usage: "+usageText(res.Usage), width)
	}
	for _, e := range res.Errors {
		who := e.AgentName
		if who == "" {
			who = "run"
		}
		label := "error"
		if e.Handled {
			label = "handled error" // delivered to an on: failure edge whose agent succeeded
		}
		paragraph(w, "", "  ", fmt.Sprintf("%s: turn %d, %s: %s", label, e.TurnNumber, who, e.Message), width)
	}
	cutOffs(w, res, width)
	for _, wn := range res.Warnings {
		paragraph(w, "", "  ", fmt.Sprintf("warning: turn %d, %s", wn.TurnNumber, wn.Message), width)
	}
	for _, h := range res.HeldBack {
		after := Count(h.Executions, "execution")
		if h.Skips > 0 {
			after += " and " + Count(h.Skips, "skip")
		}
		paragraph(w, "", "  ", fmt.Sprintf("held back: %q was ready again after %s, but its %s stops it there; raise it to let it run again",
			h.AgentName, after, h.Limit), width)
	}
	for _, x := range res.Expectations {
		if !x.Held {
			paragraph(w, "", "  ", ExpectationText(x, 100), width)
		}
	}
}

// ExpectationText is a failed expectation on one line: the expression,
// where it was written, why it failed when it erred, and the values it
// read, each cut to n runes:
//
//	expectation failed: context.judge.verdict == 'APPROVE' (review.yaml:40:5); it read context.judge.verdict = "REJECT"
func ExpectationText(x engine.Expectation, n int) string {
	s := "expectation failed: " + x.Expression
	if x.Where != "" {
		s += " (" + x.Where + ")"
	}
	if x.Error != "" {
		s += ": " + x.Error
	}
	var read []string
	for _, v := range x.Values {
		if v.Missing {
			read = append(read, v.Path+" is missing")
			continue
		}
		read = append(read, v.Path+" = "+Truncate(oneLine(jsonvalue.Compact(v.Value)), n))
	}
	if len(read) > 0 {
		s += "; it read " + strings.Join(read, ", ")
	}
	return s
}

// headline is how the run ended: "completed after 2 turns in 0.10s", and
// when executions failed, "completed with 1 failed execution after 2 turns
// in 0.10s: fetch (turn 1)"; failed fan-out instances are counted apart
// ("1 failed instance").
func headline(res *engine.Result) string {
	var failed []string
	handled, executions, instances := 0, 0, 0
	for _, e := range res.Errors {
		if e.Handled {
			handled++
		}
	}
	for _, rec := range res.ConversationHistory {
		if rec.Error != nil {
			failed = append(failed, fmt.Sprintf("%s (turn %d)", rec.AgentName, rec.TurnNumber))
			if rec.Of != "" {
				instances++ // a fan-out's instance, not an execution of its own
			} else {
				executions++
			}
		}
	}
	s := res.CompletionReason
	if len(failed) > 0 {
		var what []string
		if executions > 0 {
			what = append(what, Count(executions, "failed execution"))
		}
		if instances > 0 {
			what = append(what, Count(instances, "failed instance"))
		}
		s += " with " + strings.Join(what, " and ")
		if handled > 0 {
			s += fmt.Sprintf(" (%s handled)", thousands(handled))
		}
	}
	s += fmt.Sprintf(" after %s in %s", Count(res.TurnCount, "turn"), Seconds(res.DurationSeconds))
	if len(failed) == 0 {
		return s
	}
	s += ": " + strings.Join(failed[:min(len(failed), shownFailures)], ", ")
	if n := len(failed) - shownFailures; n > 0 {
		s += " and " + thousands(n) + " more"
	}
	return s
}

// ending explains a completion reason; resume is the command that continues
// the run, "" when it cannot be continued.
func ending(reason, resume string) string {
	if reason != engine.Cancelled {
		return endings[reason]
	}
	if resume != "" {
		return "interrupted; the run goes on with: " + resume
	}
	return "interrupted; a run started with --state FILE can be continued with resume FILE"
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

// indent is the table's left margin.
const indent = "  "

// table writes rows as aligned columns: the first flush left, the others
// flush right, two spaces apart, in at most width columns when it can (see
// fit). Wrapped header cells sit on their bottom line.
func table(w io.Writer, rows [][]string, width int) {
	widths, _ := fit(rows, indent, width)
	for ri, r := range rows {
		cells := make([][]string, len(r))
		height := 1
		for i, c := range r {
			if ri == 0 {
				cells[i] = wrapWords(strings.TrimSpace(c), widths[i])
			} else {
				cells[i] = []string{Truncate(c, widths[i])}
			}
			height = max(height, len(cells[i]))
		}
		for line := range height {
			var b strings.Builder
			b.WriteString(indent)
			for i, lines := range cells {
				c := ""
				if k := line - (height - len(lines)); k >= 0 {
					c = lines[k]
				}
				pad := strings.Repeat(" ", max(0, widths[i]-len([]rune(c))))
				if i == 0 {
					b.WriteString(c + pad)
				} else {
					b.WriteString("  " + pad + c)
				}
			}
			fmt.Fprintln(w, strings.TrimRight(b.String(), " "))
		}
	}
}

// firstColumnLeast is how narrow the cut names of the first column may get.
const firstColumnLeast = 10

// fit returns the widths of the columns of rows (the first is the header)
// so that the table is at most width columns wide, and whether it is: the
// widest columns are narrowed first, header cells down to their longest
// word (they wrap at spaces), the cells of the first column down to
// firstColumnLeast runes (they are cut with "…"); numbers are never cut.
func fit(rows [][]string, indent string, width int) (widths []int, ok bool) {
	var least []int
	for ri, r := range rows {
		for i, c := range r {
			if i >= len(widths) {
				widths = append(widths, 0)
				least = append(least, 0)
			}
			n := len([]rune(c))
			widths[i] = max(widths[i], n)
			switch {
			case ri == 0:
				for _, word := range strings.Fields(c) {
					least[i] = max(least[i], len([]rune(word)))
				}
			case i == 0:
				least[i] = max(least[i], min(n, firstColumnLeast))
			default:
				least[i] = max(least[i], n)
			}
		}
	}
	total := len([]rune(indent)) + 2*(len(widths)-1)
	for _, n := range widths {
		total += n
	}
	for total > width {
		best := -1
		for i := range widths {
			if widths[i] > least[i] && (best < 0 || widths[i] > widths[best]) {
				best = i
			}
		}
		if best < 0 {
			return widths, false
		}
		widths[best]--
		total--
	}
	return widths, true
}

// paragraph writes text with each of its lines broken at spaces into lines
// of at most width runes: the first line starts with first, the others with
// rest.
func paragraph(w io.Writer, first, rest, text string, width int) {
	prefix := first
	for _, line := range strings.Split(text, "\n") {
		if width == math.MaxInt {
			fmt.Fprintln(w, prefix+line)
			prefix = rest
			continue
		}
		for _, part := range wrapWords(line, width-len([]rune(rest))) {
			fmt.Fprintln(w, prefix+part)
			prefix = rest
		}
	}
}

// wrapWords breaks s at spaces into lines of at most width runes; a word
// longer than width is a line of its own. Runs of spaces become one.
func wrapWords(s string, width int) []string {
	var lines []string
	var cur string
	for _, word := range strings.Fields(s) {
		switch {
		case cur == "":
			cur = word
		case len([]rune(cur))+1+len([]rune(word)) <= width:
			cur += " " + word
		default:
			lines = append(lines, cur)
			cur = word
		}
	}
	return append(lines, cur)
}
