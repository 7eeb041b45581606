package bdd

import (
	"encoding/json"
	"encoding/xml"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// pass^k and pass@k against Python's exact binomials:
//
//	from math import comb
//	comb(c, k) / comb(n, k)          # pass^k
//	1 - comb(n - c, k) / comb(n, k)  # pass@k
//
// C(1000, 10) and C(200, 100) overflow an int64: the products of ratios
// do not.
func TestPassK(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		n, c, k int
		hat, at float64
	}{
		{10, 7, 3, 0.291666666667, 0.991666666667},
		{10, 10, 3, 1, 1},
		{10, 0, 1, 0, 0},
		{5, 2, 3, 0, 0.9},
		{20, 15, 5, 0.193691950464, 0.999935500516},
		{1000, 900, 10, 0.346927714792, 0.999999999934},
		{200, 100, 100, 1.1043803466e-59, 1},
		{3, 1, 3, 0, 1},
		{10, 7, 1, 0.7, 0.7},
	} {
		hat, at := passHatK(tc.n, tc.c, tc.k), passAtK(tc.n, tc.c, tc.k)
		if math.Abs(hat-tc.hat) > 1e-11*max(1, tc.hat) && math.Abs(hat/tc.hat-1) > 1e-9 {
			t.Errorf("pass^%d of %d/%d = %.12g, want %.12g", tc.k, tc.c, tc.n, hat, tc.hat)
		}
		if math.Abs(at-tc.at) > 1e-11 {
			t.Errorf("pass@%d of %d/%d = %.12g, want %.12g", tc.k, tc.c, tc.n, at, tc.at)
		}
	}
	for _, bad := range [][3]int{{2, 1, 3}, {5, 5, 0}} {
		if v := passHatK(bad[0], bad[1], bad[2]); !math.IsNaN(v) {
			t.Errorf("pass^%d of %d/%d = %g, want no estimate", bad[2], bad[1], bad[0], v)
		}
		if v := passAtK(bad[0], bad[1], bad[2]); !math.IsNaN(v) {
			t.Errorf("pass@%d of %d/%d = %g, want no estimate", bad[2], bad[1], bad[0], v)
		}
	}
}

// coinMetricFeature's scenario passes when the coin says yes, and asks
// pass^3 and pass@3 of its runs.
const coinMetricFeature = `Feature: coin
  Scenario: says yes
    Given the ensemble "e.yaml"
    When the ensemble runs
    Then the output of agent "answer" is "yes"
    And pass^3 is at least 0.8
    And pass@3 is at least 0.9
`

// Seven yes of ten runs: pass^3 = 35/120 = 0.292 < 0.8 fails the scenario
// though its pass rate is met; pass@3 = 119/120 = 0.992 holds. The text,
// JUnit, Cucumber and Markdown reports carry both.
func TestPassKSteps(t *testing.T) {
	t.Parallel()
	m := newCoinModel(t, 0.5, 1)
	m.pattern = []bool{true, true, true, true, true, true, true, false, false, false}
	dir := writeTempFiles(t, map[string]string{"e.yaml": coinEnsemble, "a.feature": coinMetricFeature})
	junitFile, cukeFile, mdFile := filepath.Join(dir, "r/j.xml"), filepath.Join(dir, "r/c.json"), filepath.Join(dir, "r/m.md")
	o := runRepeats(t, RunOptions{Options: liveOptions(m, true), Paths: []string{dir},
		Format:  "junit:" + junitFile + ",cucumber:" + cukeFile + ",markdown:" + mdFile + ",progress",
		Repeats: Repeats{Repeat: 10, PassRate: rate(0.5), Concurrency: 1}})
	if o.code != ExitFailed || o.err != nil {
		t.Fatalf("exit %d, %v:\n%s", o.code, o.err, o.out)
	}
	for _, want := range []string{"7/10 passed", "pass^3 0.292 (at least 0.8), pass@3 0.992 (at least 0.9)",
		`step "And pass^3 is at least 0.8" (line 6): pass^3 is 0.292 over 7/10 runs passed, below 0.8`, "FAILED"} {
		if !strings.Contains(o.out, want) {
			t.Errorf("the report lacks %q:\n%s", want, o.out)
		}
	}
	if strings.Contains(o.out, "pass@3 is 0.992") {
		t.Errorf("pass@3 holds, but the report says it failed:\n%s", o.out)
	}

	data, err := os.ReadFile(junitFile)
	if err != nil {
		t.Fatal(err)
	}
	var j struct {
		Failures int `xml:"failures,attr"`
		Suites   []struct {
			Props []struct {
				Name  string `xml:"name,attr"`
				Value string `xml:"value,attr"`
			} `xml:"properties>property"`
		} `xml:"testsuite"`
	}
	if err := xml.Unmarshal(data, &j); err != nil {
		t.Fatal(err)
	}
	props := map[string]string{}
	for _, p := range j.Suites[0].Props {
		props[p.Name] = p.Value
	}
	if j.Failures != 1 || props["says yes: pass^3"] != "0.292" || props["says yes: pass@3"] != "0.992" || props["says yes: pass^3 at least"] != "0.8" {
		t.Errorf("JUnit:\n%s", data)
	}

	data, err = os.ReadFile(cukeFile)
	if err != nil {
		t.Fatal(err)
	}
	var cuke []struct {
		Elements []struct {
			Metrics []struct {
				Name  string   `json:"name"`
				K     int      `json:"k"`
				Value *float64 `json:"value"`
			} `json:"metrics"`
		} `json:"elements"`
	}
	if err := json.Unmarshal(data, &cuke); err != nil {
		t.Fatal(err)
	}
	if ms := cuke[0].Elements[0].Metrics; len(ms) != 2 || ms[0].Name != "pass^3" || ms[0].K != 3 || ms[0].Value == nil ||
		math.Abs(*ms[0].Value-35.0/120) > 1e-12 || ms[1].Name != "pass@3" {
		t.Errorf("Cucumber:\n%s", data)
	}

	data, err = os.ReadFile(mdFile)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(data), "| pass^k, pass@k |") || !strings.Contains(string(data), "pass^3 0.292 (at least 0.8)") {
		t.Errorf("Markdown:\n%s", data)
	}
}

// A metric step asks for at least k runs before any run is made: one run
// (no --repeat) is a usage error naming the step and its line; a bound
// outside 0–1 too.
func TestPassKStepNeedsRuns(t *testing.T) {
	t.Parallel()
	m := newCoinModel(t, 1, 1)
	for _, tc := range []struct {
		name, feature, want string
		repeat              int
	}{
		{"one run", coinMetricFeature, `a.feature:6: step "And pass^3 is at least 0.8" needs at least 3 runs of the scenario, it has 1`, 0},
		{"two runs", coinMetricFeature, `a.feature:7: step "And pass@3 is at least 0.9" needs at least 3 runs of the scenario, it has 2`, 2},
		{"bad bound", strings.Replace(coinMetricFeature, "0.8", "80", 1), `a.feature:6: step "And pass^3 is at least 80": the bound must be a share from 0 to 1`, 5},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dir := writeTempFiles(t, map[string]string{"e.yaml": coinEnsemble, "a.feature": tc.feature})
			o := runRepeats(t, RunOptions{Options: liveOptions(m, true), Paths: []string{dir}, Repeats: Repeats{Repeat: tc.repeat}})
			if o.code != ExitUsage || o.err == nil || !strings.Contains(o.err.Error(), tc.want) {
				t.Fatalf("exit %d, %v, want %q:\n%s", o.code, o.err, tc.want, o.out)
			}
		})
	}
	if got := m.requests.Load(); got != 0 {
		t.Errorf("%d model requests, want none before the check", got)
	}
}

// Fewer runs than k ended (a check after the runs, as a budget may stop
// them) fails the scenario naming the step.
func TestPassKCheckAfterTooFewRuns(t *testing.T) {
	t.Parallel()
	p := &planned{name: "s", maxRuns: 5, metrics: []*metricStep{{k: 3, min: 0.5, text: "Then pass^3 is at least 0.5", line: 9}}}
	tr := &tracked{planned: p, passes: 2, runs: []*runResult{{passed: true}, {passed: true}}, verdict: passing}
	checkMetrics([]*tracked{tr})
	if tr.verdict != failing || len(tr.metricFailures) != 1 || !strings.Contains(tr.metricFailures[0], `step "Then pass^3 is at least 0.5" (line 9) needs at least 3 runs, 2 ended`) {
		t.Fatalf("%v %q", tr.verdict, tr.metricFailures)
	}
}

// With a baseline, the Markdown table gives the metrics after the verdict.
func TestPassKInMarkdownComparison(t *testing.T) {
	t.Parallel()
	p := &planned{path: "a.feature", name: "s", maxRuns: 10, need: 0.5, metrics: []*metricStep{{k: 3, min: 0.8}}}
	tr := &tracked{planned: p, passes: 7, verdict: failing}
	for i := range 10 {
		tr.runs = append(tr.runs, &runResult{n: i + 1, passed: i < 7})
	}
	base := &Baseline{Version: 1, Scenarios: map[string]map[string]BaselineEntry{"a.feature": {"s": {Passes: 7, Runs: 10}}}}
	var b strings.Builder
	writeMarkdown(&b, &repeatRun{ts: []*tracked{tr}}, compare(base, []*tracked{tr}), "base.json")
	if !strings.Contains(b.String(), "| FAILED; pass^3 0.292 (at least 0.8) |") {
		t.Fatalf("markdown:\n%s", b.String())
	}
}
