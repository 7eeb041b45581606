package bdd

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// compareOne compares one scenario's passes of runs with a baseline's.
func compareOne(base, now BaselineEntry) *comparison {
	b := &Baseline{Version: baselineVersion, Scenarios: map[string]map[string]BaselineEntry{"a.feature": {"s": base}}}
	t := &tracked{planned: &planned{path: "a.feature", name: "s"}, passes: now.Passes}
	for range now.Runs {
		t.runs = append(t.runs, &runResult{})
	}
	return compare(b, []*tracked{t})[0]
}

// A change is a regression only below p = 0.05: a fall whose p-value lies
// between 0.05 and 0.5 is within chance, and so are the same counts on
// both sides; counts as large as a baseline may hold compare without
// overflow and quickly.
func TestBaselineComparisonThreshold(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name        string
		base, now   BaselineEntry
		want        change
		pLow, pHigh float64 // the range the comparison's p lies in
	}{
		{"a fall within chance (p = 0.2)", BaselineEntry{18, 20}, BaselineEntry{15, 20}, unchanged, 0.05, 0.5},
		{"a smaller fall within chance (p = 0.3)", BaselineEntry{17, 20}, BaselineEntry{15, 20}, unchanged, 0.05, 0.5},
		{"the same counts", BaselineEntry{15, 20}, BaselineEntry{15, 20}, unchanged, 0.5, 1},
		{"always passed, still does", BaselineEntry{20, 20}, BaselineEntry{20, 20}, unchanged, 1, 1},
		{"a clear fall (p = 0.03)", BaselineEntry{18, 20}, BaselineEntry{12, 20}, regression, 0, 0.05},
		{"a clear rise", BaselineEntry{12, 20}, BaselineEntry{18, 20}, improvement, 0, 0.05},
		{"a billion runs, all passed, and all passed now", BaselineEntry{maxBaselineRuns, maxBaselineRuns}, BaselineEntry{20, 20}, unchanged, 1, 1},
		{"a billion runs at 90%, now 18/20", BaselineEntry{maxBaselineRuns / 10 * 9, maxBaselineRuns}, BaselineEntry{18, 20}, unchanged, 0.05, 1},
		{"a billion runs at 90%, now 9/20", BaselineEntry{maxBaselineRuns / 10 * 9, maxBaselineRuns}, BaselineEntry{9, 20}, regression, 0, 0.05},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c := compareOne(tc.base, tc.now)
			if c.change != tc.want || c.p < tc.pLow || c.p > tc.pHigh {
				t.Errorf("%d/%d against %d/%d: change %d with p = %.4g, want change %d with p in [%g, %g]",
					tc.now.Passes, tc.now.Runs, tc.base.Passes, tc.base.Runs, c.change, c.p, tc.want, tc.pLow, tc.pHigh)
			}
		})
	}
}

// A baseline whose counts no test run could make is refused, naming the
// file and the scenario: negative counts, more passes than runs, and runs
// near the int64 limit (which once made 100% against 100% a regression).
func TestBaselineImpossibleCountsRefused(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, entry, want string
	}{
		{"near the int64 limit", `{"passes": 9223372036854775807, "runs": 9223372036854775807}`, `9223372036854775807 runs is more than any test run makes (at most 1000000000)`},
		{"over the maximum", `{"passes": 5, "runs": 1000000001}`, `1000000001 runs is more than any test run makes`},
		{"negative", `{"passes": -1, "runs": 20}`, `-1 passes of 20 runs is not possible`},
		{"more passes than runs", `{"passes": 21, "runs": 20}`, `21 passes of 20 runs is not possible`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			path := filepath.Join(dir, "base.json")
			writeFiles(t, dir, map[string]string{"base.json": `{"version": 1, "scenarios": {"features/a.feature": {"Urgent mail is flagged": ` + tc.entry + `}}}`})
			_, err := readBaseline(path)
			if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), path) ||
				!strings.Contains(err.Error(), `features/a.feature, "Urgent mail is flagged"`) {
				t.Fatalf("got %v, want an error naming %s, the scenario and %q", err, path, tc.want)
			}
		})
	}
}

// Through the test command: a scenario that passed 18 of 20 runs in the
// baseline and passes 15 of 20 now (p = 0.2) is unchanged, exit 0; the
// same counts on both sides are unchanged too; a baseline near the int64
// limit is a usage error, exit 2.
func TestBaselineWithinChanceEndToEnd(t *testing.T) {
	t.Parallel()
	dir := writeTempFiles(t, map[string]string{"e.yaml": coinEnsemble, "a.feature": coinFeature("")})
	base := filepath.Join(dir, "base.json")
	pattern := make([]bool, 20) // 15 yes of 20
	for i := range pattern {
		pattern[i] = i%4 != 3
	}
	run := func(r Repeats) repeatOutcome {
		m := newCoinModel(t, 0, 3)
		m.pattern = pattern
		r.Repeat, r.Concurrency, r.PassRate = 20, 1, rate(0.5)
		return runRepeats(t, RunOptions{Options: liveOptions(m, true), Paths: []string{filepath.Join(dir, "a.feature")}, Repeats: r})
	}
	o := run(Repeats{SaveBaseline: base})
	if o.code != ExitPassed {
		t.Fatalf("exit %d:\n%s", o.code, o.out)
	}
	setBaseline := func(passes, runs int) {
		t.Helper()
		data, err := os.ReadFile(base)
		if err != nil {
			t.Fatal(err)
		}
		var b Baseline
		if err := json.Unmarshal(data, &b); err != nil {
			t.Fatal(err)
		}
		for _, scs := range b.Scenarios {
			scs["says yes"] = BaselineEntry{passes, runs}
		}
		data, _ = json.Marshal(b)
		if err := os.WriteFile(base, data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		passes, runs int
	}{{18, 20}, {15, 20}} {
		setBaseline(tc.passes, tc.runs)
		o = run(Repeats{Baseline: base})
		if passes, runs := counts(t, o.out); passes != 15 || runs != 20 {
			t.Fatalf("the pattern gave %d/%d, want 15/20:\n%s", passes, runs, o.out)
		}
		if o.code != ExitPassed || strings.Contains(o.out, "REGRESSION") || !strings.Contains(o.out, "0 regressions, 0 improvements, 1 unchanged") {
			t.Errorf("15/20 against %d/%d: exit %d, want 0 and unchanged:\n%s", tc.passes, tc.runs, o.code, o.out)
		}
	}
	setBaseline(1<<63-1, 1<<63-1)
	o = run(Repeats{Baseline: base})
	if o.code != ExitUsage || o.err == nil || !strings.Contains(o.err.Error(), base) || !strings.Contains(o.err.Error(), "more than any test run makes") {
		t.Errorf("a baseline near the int64 limit: exit %d, %v:\n%s", o.code, o.err, o.out)
	}
}
