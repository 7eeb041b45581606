package bdd

import (
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"
)

// passHatK is the unbiased estimate of pass^k from runs: the chance that k
// runs drawn without replacement from the n runs made all pass, which c
// of them did: C(c, k) / C(n, k), computed as the product of the ratios
// (c-i)/(n-i), i < k, so that no binomial coefficient overflows. It is 0
// when k > c; NaN when k > n or k < 1 (no estimate).
func passHatK(n, c, k int) float64 {
	if k < 1 || k > n || c < 0 || c > n {
		return nanValue()
	}
	p := 1.0
	for i := range k {
		if c-i <= 0 {
			return 0
		}
		p *= float64(c-i) / float64(n-i)
	}
	return p
}

// passAtK is the unbiased estimate of pass@k from runs: the chance that
// at least one of k runs drawn without replacement from the n made passed:
// 1 - C(n-c, k) / C(n, k), the product of the ratios (n-c-i)/(n-i), i < k.
// It is 1 when k > n-c; NaN when k > n or k < 1.
func passAtK(n, c, k int) float64 {
	if k < 1 || k > n || c < 0 || c > n {
		return nanValue()
	}
	q := 1.0
	for i := range k {
		if n-c-i <= 0 {
			return 1
		}
		q *= float64(n-c-i) / float64(n-i)
	}
	return 1 - q
}

func nanValue() float64 { return math.NaN() }

// metricStep is the step of a scenario that asks pass^k or pass@k of its
// runs (Then pass^3 is at least 0.8): it is checked over all the runs, once
// they ended, not in each run.
type metricStep struct {
	at   bool // pass@k; else pass^k
	k    int
	min  float64
	text string // the step as written, keyword and all
	line int64
}

// metricStepRE is the step's phrasing, which steps.go registers too.
var metricStepRE = regexp.MustCompile(`^pass(\^|@)(\d+) is at least (\S+)$`)

// name is "pass^3" or "pass@3".
func (m *metricStep) name() string {
	if m.at {
		return "pass@" + strconv.Itoa(m.k)
	}
	return "pass^" + strconv.Itoa(m.k)
}

// parseMetricStep reads a step's text as a metric step: ok false when it
// is not one, an error when it is one badly written.
func parseMetricStep(text string) (m *metricStep, ok bool, err error) {
	g := metricStepRE.FindStringSubmatch(strings.TrimSpace(text))
	if g == nil {
		return nil, false, nil
	}
	k, err := strconv.Atoi(g[2])
	if err != nil || k < 1 {
		return nil, true, fmt.Errorf("k must be a whole number of runs, at least 1, got %s", g[2])
	}
	v, err := strconv.ParseFloat(g[3], 64)
	if err != nil || v < 0 || v > 1 || v != v {
		return nil, true, fmt.Errorf("the bound must be a share from 0 to 1 (0.8 for 80%%), got %s", g[3])
	}
	return &metricStep{at: g[1] == "@", k: k, min: v}, true, nil
}

// value is the metric over passes out of runs; NaN when runs < k.
func (m *metricStep) value(runs, passes int) float64 {
	if m.at {
		return passAtK(runs, passes, m.k)
	}
	return passHatK(runs, passes, m.k)
}

// check is why the metric fails over passes out of runs, "" when it holds.
// Fewer runs than k is a failure that names the step.
func (m *metricStep) check(runs, passes int) string {
	if runs < m.k {
		return fmt.Sprintf("step %q (line %d) needs at least %d runs, %d ended: run the scenario with --repeat %d or @repeat(%d)", m.text, m.line, m.k, runs, m.k, m.k)
	}
	if v := m.value(runs, passes); v < m.min-1e-12 {
		return fmt.Sprintf("step %q (line %d): %s is %s over %d/%d runs passed, below %g", m.text, m.line, m.name(), metricValue(v), passes, runs, m.min)
	}
	return ""
}

// metricValue formats a metric's value to three decimals.
func metricValue(v float64) string {
	if v != v {
		return "–"
	}
	return strconv.FormatFloat(v, 'f', 3, 64)
}

// metricsLine is a scenario's metrics: "pass^3 0.292 (at least 0.8),
// pass@3 0.992 (at least 0.9)"; "" when it has no metric step.
func (t *tracked) metricsLine() string {
	var parts []string
	for _, m := range t.metrics {
		parts = append(parts, fmt.Sprintf("%s %s (at least %g)", m.name(), metricValue(m.value(t.done(), t.passes)), m.min))
	}
	return strings.Join(parts, ", ")
}

// checkMetrics applies the metric steps of the scenarios once their runs
// ended: a scenario whose runs passed often enough fails when one of its
// metrics is below its bound (or it has fewer runs than the metric's k).
// A scenario not finished (the budget) stays so.
func checkMetrics(ts []*tracked) {
	for _, t := range ts {
		if t.verdict == undecided {
			continue
		}
		for _, m := range t.metrics {
			if why := m.check(t.done(), t.passes); why != "" {
				t.metricFailures = append(t.metricFailures, why)
				t.verdict = failing
			}
		}
	}
}

// junitProperties are a repeated scenario's metrics, as properties of its
// JUnit testsuite: "name: pass^3" and "name: pass^3 at least".
func (t *tracked) junitProperties() []junitProperty {
	var ps []junitProperty
	for _, m := range t.metrics {
		ps = append(ps, junitProperty{Name: t.name + ": " + m.name(), Value: metricValue(m.value(t.done(), t.passes))},
			junitProperty{Name: t.name + ": " + m.name() + " at least", Value: strconv.FormatFloat(m.min, 'f', -1, 64)})
	}
	return ps
}
