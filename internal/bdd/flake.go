package bdd

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"unicode/utf8"

	"github.com/ensemble-run/ensemble/state"
)

// flake explains a scenario with both passing and failing runs: where the
// history of its first failing run departs from that of the passing run
// that follows it longest. Nil when the scenario is not flaky, or its runs
// have no history to compare.
type flake struct {
	failing, passing int // the runs' numbers
	turn             int
	agent            string
	execution        int
	what             string // "gave" (its output or error differed) or "got" (only its input did)
	pass, fail       string // what each run's record had, short
	note             string // when the histories part otherwise (an agent ran in one only)
	judge            string // when a judge step failed the failing run: its score and threshold
}

// explainFlake is explainHistory, with the score and threshold of the judge
// step that failed the failing run, when one did (and what the judge gave
// the passing run).
func explainFlake(runs []*runResult) *flake {
	f := explainHistory(runs)
	if f == nil {
		return nil
	}
	if f.judge = judgeDeparture(runs, f.failing, f.passing); f.judge != "" && f.turn == 0 && f.what == "" {
		f.note = fmt.Sprintf("run %d's history is the same as passing run %d's: the judge's score differs", f.failing, f.passing)
	}
	return f
}

// judgeDeparture says what the judge whose step failed run failing scored,
// against the threshold, and what it scored in run passing; "" when no
// judge step failed it.
func judgeDeparture(runs []*runResult, failing, passing int) string {
	var fr, pr *runResult
	for _, r := range runs {
		switch r.n {
		case failing:
			fr = r
		case passing:
			pr = r
		}
	}
	if fr == nil {
		return ""
	}
	for _, c := range fr.checks {
		if c.passed {
			continue
		}
		want := "want at least " + c.min
		if c.outside != "" {
			want = "outside the scale of " + c.outside
		}
		s := fmt.Sprintf("the judge %q scored agent %q %s in failing run %d, %s", c.judge, c.agent, costText(c.score), failing, want)
		if pr != nil {
			for _, p := range pr.checks {
				if p.judge == c.judge && p.agent == c.agent {
					s += fmt.Sprintf("; %s in passing run %d", costText(p.score), passing)
					break
				}
			}
		}
		return s
	}
	return ""
}

// explainHistory is where the history of the first failing run departs
// from that of the passing run that follows it longest.
func explainHistory(runs []*runResult) *flake {
	var failing *runResult
	var passing []*runResult
	for _, r := range runs {
		switch {
		case r.result == nil:
		case r.passed:
			passing = append(passing, r)
		case failing == nil:
			failing = r
		}
	}
	if failing == nil || len(passing) == 0 {
		return nil
	}
	fh := failing.result.ConversationHistory
	best, bestAt := passing[0], -1
	for _, p := range passing {
		at := departure(p.result.ConversationHistory, fh)
		if at > bestAt {
			best, bestAt = p, at
		}
	}
	ph := best.result.ConversationHistory
	f := &flake{failing: failing.n, passing: best.n}
	i := bestAt
	switch {
	case i >= len(ph) && i >= len(fh):
		// The same history: the runs differ in what the steps checked
		// beyond it (the final state, the completion).
		f.note = fmt.Sprintf("run %d's history is the same as passing run %d's: they differ after it (the final state or how the run completed)", f.failing, f.passing)
		return f
	case i >= len(fh):
		r := ph[i]
		f.turn, f.agent, f.execution = r.TurnNumber, r.AgentName, r.Execution
		f.note = fmt.Sprintf("failing run %d stopped before turn %d, where passing run %d went on with agent %q, execution %d", f.failing, r.TurnNumber, f.passing, r.AgentName, r.Execution)
		return f
	case i >= len(ph):
		r := fh[i]
		f.turn, f.agent, f.execution = r.TurnNumber, r.AgentName, r.Execution
		f.note = fmt.Sprintf("failing run %d went on at turn %d with agent %q, execution %d, where passing run %d had ended", f.failing, r.TurnNumber, r.AgentName, r.Execution, f.passing)
		return f
	}
	p, r := ph[i], fh[i]
	f.turn, f.agent, f.execution = r.TurnNumber, r.AgentName, r.Execution
	if p.AgentName != r.AgentName || p.Execution != r.Execution || p.TurnNumber != r.TurnNumber {
		f.note = fmt.Sprintf("at turn %d, failing run %d ran agent %q (execution %d) where passing run %d ran agent %q (execution %d)",
			r.TurnNumber, f.failing, r.AgentName, r.Execution, f.passing, p.AgentName, p.Execution)
		return f
	}
	// What an execution gave decides first: an LLM agent's input holds
	// the messages it exchanged, its reply among them.
	if pv, rv := outcome(p), outcome(r); pv != rv {
		f.what = "gave"
		f.pass, f.fail = shortDiff(pv, rv)
		return f
	}
	f.what = "got"
	f.pass, f.fail = shortDiff(showValue(p.InputData), showValue(r.InputData))
	return f
}

// departure is the index of the first record where two histories differ:
// the length of the shorter when one is the start of the other.
func departure(a, b []*state.Record) int {
	for i := range min(len(a), len(b)) {
		if !sameRecord(a[i], b[i]) {
			return i
		}
	}
	if len(a) == len(b) {
		return len(a)
	}
	return min(len(a), len(b))
}

func sameRecord(a, b *state.Record) bool {
	return a.TurnNumber == b.TurnNumber && a.AgentName == b.AgentName && a.Execution == b.Execution &&
		a.Skipped == b.Skipped && reflect.DeepEqual(a.InputData, b.InputData) &&
		reflect.DeepEqual(a.OutputData, b.OutputData) && reflect.DeepEqual(a.Error, b.Error)
}

// outcome is what an execution gave: its output, or its error.
func outcome(r *state.Record) string {
	if r.Error != nil {
		return "error: " + *r.Error
	}
	return showValue(r.OutputData)
}

func showValue(v any) string {
	if s, ok := v.(string); ok {
		b, _ := json.Marshal(s)
		return string(b)
	}
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}

// diffWindow is how much of each value a flake's explanation shows.
const diffWindow = 60

// shortDiff cuts two values to a window around where they first differ,
// marking what was cut with …
func shortDiff(a, b string) (string, string) {
	i := 0
	for i < len(a) && i < len(b) && a[i] == b[i] {
		i++
	}
	from := max(0, i-diffWindow/3)
	for from > 0 && !utf8.RuneStart(a[from]) {
		from--
	}
	cut := func(s string) string {
		if from > len(s) {
			return s
		}
		out := s[from:]
		if len(out) > diffWindow {
			end := diffWindow
			for end > 0 && !utf8.RuneStart(out[end]) {
				end--
			}
			out = out[:end] + "…"
		}
		if from > 0 {
			out = "…" + out
		}
		return out
	}
	return cut(a), cut(b)
}

// String is the explanation, on lines indented by the report.
func (f *flake) lines() []string {
	head := fmt.Sprintf("flaky: failing run %d departs from passing run %d", f.failing, f.passing)
	var out []string
	if f.note != "" {
		out = []string{head + ": " + f.note}
	} else {
		out = []string{
			fmt.Sprintf("%s at turn %d: agent %q, execution %d, %s", head, f.turn, f.agent, f.execution, map[string]string{"got": "got a different input", "gave": "gave a different output"}[f.what]),
			"  passing: " + oneLine(f.pass),
			"  failing: " + oneLine(f.fail),
		}
	}
	if f.judge != "" {
		out = append(out, "  judge: "+f.judge)
	}
	return out
}

func oneLine(s string) string { return strings.ReplaceAll(s, "\n", `\n`) }
