package bdd

import (
	"context"
	"path/filepath"
	"testing"
)

// No more runs go at once than there are runs to start, however large
// --concurrency is (1,000,000 workers took 8.8 GB waiting): as a batch
// runs no more at once than its inputs.
func TestConcurrencyCappedAtTheRuns(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name        string
		concurrency int
		record      bool
		runs        []int // each scenario's most runs
		want        int
	}{
		{"a million for 3 runs", 1_000_000, false, []int{3}, 3},
		{"a million for two scenarios", 1_000_000, false, []int{3, 5}, 8},
		{"fewer than the runs", 4, false, []int{20, 20}, 4},
		{"the default", 0, false, []int{20}, DefaultConcurrency},
		{"the default, 2 runs", 0, false, []int{2}, 2},
		{"adding to recordings", 8, true, []int{20}, 1},
		{"huge repeats do not overflow", 1_000_000, false, []int{1 << 62, 1 << 62, 1 << 62}, 1_000_000},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			rr := &repeatRun{o: &RunOptions{Repeats: Repeats{Concurrency: tc.concurrency}}}
			rr.o.RecordMissing = tc.record
			for _, n := range tc.runs {
				rr.ts = append(rr.ts, &tracked{planned: &planned{maxRuns: n}})
			}
			if got := rr.workerCount(); got != tc.want {
				t.Errorf("%d workers, want %d", got, tc.want)
			}
		})
	}
}

// A test run cancelled (Ctrl-C, SIGTERM) before its runs start starts no
// worker and no run.
func TestCancelledBeforeTheStart(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	pl := &plan{scenarios: []*planned{{file: "none.feature", line: 1, maxRuns: 1_000_000, need: 1}}}
	rr := runAll(ctx, &RunOptions{Repeats: Repeats{Concurrency: 1_000_000}}, pl, &undefinedSteps{})
	if rr.workers != 0 || rr.ts[0].started != 0 {
		t.Fatalf("%d workers and %d runs started after the cancel, want none", rr.workers, rr.ts[0].started)
	}
}

// Through the test command: --concurrency 1000000 with --repeat 3 runs
// the scenario's 3 runs.
func TestHugeConcurrencyRunsTheRuns(t *testing.T) {
	t.Parallel()
	m := newCoinModel(t, 1, 1)
	dir := writeTempFiles(t, map[string]string{"e.yaml": coinEnsemble, "a.feature": coinFeature("")})
	o := runRepeats(t, RunOptions{Options: liveOptions(m, true), Paths: []string{filepath.Join(dir, "a.feature")},
		Repeats: Repeats{Repeat: 3, Concurrency: 1_000_000, PassRate: rate(1), SaveBaseline: filepath.Join(dir, "b.json")}})
	if passes, runs := counts(t, o.out); o.code != ExitPassed || passes != 3 || runs != 3 {
		t.Fatalf("exit %d, %d/%d:\n%s", o.code, passes, runs, o.out)
	}
}
