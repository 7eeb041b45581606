package bdd

import (
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"
)

// RunSample is one run of a scenario as a baseline keeps it: what its
// ensemble's run spent (the judges' requests are the test's, not the
// ensemble's, and are left out) and how long the run took.
type RunSample struct {
	Tokens   int     `json:"tokens"` // input and output
	Cost     float64 `json:"cost,omitempty"`
	Requests int     `json:"requests"`
	Seconds  float64 `json:"seconds"`
}

// minSpendRuns is the fewest runs a side must have for its spend to be
// compared: the U test of fewer cannot reach p < 0.05 often enough to
// mean anything (4 against 4 can at best reach 0.014, one ranking in 70).
const minSpendRuns = 5

// samplesOf are the samples of the runs of t that ran their ensemble.
func samplesOf(t *tracked) []RunSample {
	var ss []RunSample
	for _, r := range t.runs {
		if r.result == nil {
			continue
		}
		u := r.result.Usage
		ss = append(ss, RunSample{Tokens: u.InputTokens + u.OutputTokens, Cost: u.Cost, Requests: u.Requests,
			Seconds: math.Round(r.duration.Seconds()*1000) / 1000})
	}
	return ss
}

// checkSamples refuses a baseline whose samples no run could have made:
// negative or not finite values, or more samples than the scenario's runs.
func checkSamples(path string, b *Baseline) error {
	for f, scs := range b.Samples {
		for name, ss := range scs {
			e, ok := b.Scenarios[f][name]
			if !ok {
				return usagef("--baseline %s: %s, %q has samples but no pass rate", path, f, name)
			}
			if len(ss) > e.Runs {
				return usagef("--baseline %s: %s, %q: %d samples of %d runs is not possible", path, f, name, len(ss), e.Runs)
			}
			for i, s := range ss {
				if s.Tokens < 0 || s.Requests < 0 || !(s.Cost >= 0) || !(s.Seconds >= 0) || math.IsInf(s.Cost, 0) || math.IsInf(s.Seconds, 0) {
					return usagef("--baseline %s: %s, %q: sample %d has a negative or not finite value", path, f, name, i+1)
				}
			}
		}
	}
	return nil
}

// spendMetric is a measure of a run that a baseline compares.
type spendMetric struct {
	name string
	of   func(RunSample) float64
	// fails: a rise fails the test run. Latency does not: wall-clock
	// time depends on the machine and its load, which the baseline's
	// runs need not have shared; its rise is reported only.
	fails bool
}

var spendMetrics = []spendMetric{
	{"tokens", func(s RunSample) float64 { return float64(s.Tokens) }, true},
	{"cost", func(s RunSample) float64 { return s.Cost }, true},
	{"requests", func(s RunSample) float64 { return float64(s.Requests) }, true},
	{"latency", func(s RunSample) float64 { return s.Seconds }, false},
}

// spendComparison is a scenario's runs' spend compared with its
// baseline's samples.
type spendComparison struct {
	baseRuns, nowRuns int
	metrics           []*metricComparison // empty when a side has too few runs
}

// metricComparison is one measure compared: the one-sided Mann-Whitney U
// tests, a rise being a regression and a fall an improvement.
type metricComparison struct {
	spendMetric
	baseMedian, nowMedian float64
	p                     float64 // of the change's test; of the smaller one when unchanged
	change                change  // regression, improvement or unchanged
}

// enough reports whether both sides have the runs to compare.
func (s *spendComparison) enough() bool {
	return s.baseRuns >= minSpendRuns && s.nowRuns >= minSpendRuns
}

// regressed reports whether a measure whose rise fails the test run rose.
func (s *spendComparison) regressed() bool {
	if s == nil {
		return false
	}
	for _, m := range s.metrics {
		if m.change == regression && m.fails {
			return true
		}
	}
	return false
}

// compareSpend compares now's samples with the baseline's, each measure
// that either side has some of (a cost of 0 throughout is no pricing).
func compareSpend(base, now []RunSample) *spendComparison {
	sc := &spendComparison{baseRuns: len(base), nowRuns: len(now)}
	if !sc.enough() {
		return sc
	}
	for _, m := range spendMetrics {
		x, y := values(now, m.of), values(base, m.of)
		if slices.Max(x) == 0 && slices.Max(y) == 0 {
			continue
		}
		mc := &metricComparison{spendMetric: m, baseMedian: median(y), nowMedian: median(x), change: unchanged}
		up, down := mannWhitneyGreater(x, y), mannWhitneyGreater(y, x)
		switch {
		case up < significance:
			mc.p, mc.change = up, regression
		case down < significance:
			mc.p, mc.change = down, improvement
		default:
			mc.p = min(up, down)
		}
		sc.metrics = append(sc.metrics, mc)
	}
	return sc
}

func values(ss []RunSample, of func(RunSample) float64) []float64 {
	v := make([]float64, len(ss))
	for i, s := range ss {
		v[i] = of(s)
	}
	return v
}

func median(v []float64) float64 {
	s := slices.Clone(v)
	slices.Sort(s)
	n := len(s)
	if n == 0 {
		return 0
	}
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

// format writes a value of the measure: tokens and requests whole, cost
// as the reports do, latency in seconds.
func (m *metricComparison) format(v float64) string {
	switch m.name {
	case "cost":
		return formatCost(v)
	case "latency":
		return time.Duration(v * float64(time.Second)).Round(time.Millisecond).String()
	}
	return strconv.FormatFloat(v, 'f', -1, 64)
}

// line is "tokens median 30 → 45 (Mann-Whitney U p = 0.002)".
func (m *metricComparison) line() string {
	return fmt.Sprintf("%s median %s → %s (Mann-Whitney U p %s)", m.name, m.format(m.baseMedian), m.format(m.nowMedian), pValue(m.p))
}

// label is the word of a changed measure in the text report.
func (m *metricComparison) label() string {
	switch {
	case m.change == regression && m.fails:
		return "REGRESSION"
	case m.change == regression:
		return "slower"
	case m.name == "latency":
		return "faster"
	}
	return "improvement"
}

// writeSpendText writes the measures that changed beyond chance, and the
// scenarios whose runs were too few to compare.
func writeSpendText(w io.Writer, cmp []*comparison) {
	var regressions, improvements, compared int
	for _, c := range cmp {
		if c.spend == nil {
			continue
		}
		label := fmt.Sprintf("%s: %s", c.path, c.name)
		if !c.spend.enough() {
			fmt.Fprintf(w, "  spend not compared %s: %d runs with samples now, %d in the baseline (at least %d a side)\n",
				label, c.spend.nowRuns, c.spend.baseRuns, minSpendRuns)
			continue
		}
		compared++
		for _, m := range c.spend.metrics {
			switch m.change {
			case regression:
				regressions++
			case improvement:
				improvements++
			default:
				continue
			}
			fmt.Fprintf(w, "  %s %s: %s\n", m.label(), label, m.line())
		}
	}
	if compared > 0 {
		fmt.Fprintf(w, "  spend and latency of %s: %s, %s (one-sided Mann-Whitney U, p < 0.05)\n",
			plural(compared, "scenario"), plural(regressions, "rise"), plural(improvements, "fall"))
	}
}

// writeSpendMarkdown writes the measures compared as a table, rises
// first.
func writeSpendMarkdown(w io.Writer, cmp []*comparison) {
	var rows []string
	for _, ch := range []change{regression, improvement, unchanged} {
		for _, c := range cmp {
			if c.spend == nil {
				continue
			}
			for _, m := range c.spend.metrics {
				if m.change != ch {
					continue
				}
				mark := ""
				switch {
				case ch == regression && m.fails:
					mark = "🔴 regression"
				case ch == regression:
					mark = "🟠 slower"
				case ch == improvement:
					mark = "🟢 " + strings.ToLower(m.label())
				}
				rows = append(rows, fmt.Sprintf("| %s | %s %s | %s | %s | %s | %s |", mark, mdCode(c.path), mdText(c.name), m.name,
					m.format(m.baseMedian), m.format(m.nowMedian), strings.TrimPrefix(pValue(m.p), "= ")))
			}
		}
	}
	var few []string
	for _, c := range cmp {
		if c.spend != nil && !c.spend.enough() {
			few = append(few, fmt.Sprintf("%s %s (%d now, %d in the baseline)", mdCode(c.path), mdText(c.name), c.spend.nowRuns, c.spend.baseRuns))
		}
	}
	if len(rows) == 0 && len(few) == 0 {
		return
	}
	fmt.Fprintln(w)
	if len(rows) > 0 {
		fmt.Fprintln(w, "Spend and latency (medians; one-sided Mann-Whitney U, p < 0.05):")
		fmt.Fprintln(w)
		fmt.Fprintln(w, "| | Scenario | Measure | Baseline | Now | p |")
		fmt.Fprintln(w, "|---|---|---|---|---|---|")
		for _, r := range rows {
			fmt.Fprintln(w, r)
		}
	}
	if len(few) > 0 {
		fmt.Fprintf(w, "\nSpend not compared, fewer than %d runs a side: %s.\n", minSpendRuns, strings.Join(few, ", "))
	}
}

// spendHeadline adds the spend regressions to the Markdown headline:
// ", and **2 spend regressions**"; "" when there is none.
func spendHeadline(cmp []*comparison) string {
	n := 0
	for _, c := range cmp {
		if c.spend == nil {
			continue
		}
		for _, m := range c.spend.metrics {
			if m.change == regression && m.fails {
				n++
			}
		}
	}
	if n == 0 {
		return ""
	}
	return ", and **" + plural(n, "spend regression") + "**"
}
