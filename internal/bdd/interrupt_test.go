package bdd

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ensemble-run/ensemble/store"
)

// Ctrl-C during a test run without repeats exits 130, as a run with
// repeats does: the scenarios left do not run (skipped), rather than each
// running with a cancelled context and failing, exit 1.
func TestInterruptedExits130(t *testing.T) {
	t.Parallel()
	dir := writeTempFiles(t, map[string]string{
		"e.yaml": "name: e\nagents:\n  - {name: a, script: a.sh}\n",
		"a.sh":   "#!/bin/sh\ncat >/dev/null\necho 1\n",
		"a.feature": "Feature: f\n  Scenario: one\n    Given the ensemble \"e.yaml\"\n    When the ensemble runs\n    Then the completion reason is \"completed\"\n\n" +
			"  Scenario: two\n    Given the ensemble \"e.yaml\"\n    When the ensemble runs\n    Then the completion reason is \"completed\"\n",
	})
	if err := os.Chmod(filepath.Join(dir, "a.sh"), 0o755); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel() // Ctrl-C before the scenarios start
	var out, stderr bytes.Buffer
	code, err := Run(RunOptions{Paths: []string{dir}, Format: "junit", Context: ctx, Output: &out, Stderr: &stderr})
	if code != ExitCancelled || err != nil {
		t.Fatalf("exit %d, %v, want %d\n%s%s", code, err, ExitCancelled, out.String(), stderr.String())
	}
	if !strings.Contains(out.String(), `failures="0" errors="0" skipped="2"`) || !strings.Contains(stderr.String(), "interrupted") {
		t.Errorf("the report:\n%s\nstderr:\n%s", out.String(), stderr.String())
	}
}

// With --state, the scenarios Ctrl-C stopped or skipped are saved as
// cancelled, as the runs of an interrupted run with repeats are, not as
// passed, and the test run as interrupted.
func TestInterruptedSavesCancelledResults(t *testing.T) {
	t.Parallel()
	dir := writeTempFiles(t, map[string]string{
		"a.feature": "Feature: f\n  Scenario: one\n    Given the turn limit is 2\n\n  Scenario: two\n    Given the turn limit is 3\n",
	})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	tr, results, _, _ := savedResults(t, RunOptions{Paths: []string{dir}, Context: ctx})
	if tr.Status != "interrupted" || len(results) != 2 {
		t.Fatalf("test run %s, %d results, want interrupted and 2", tr.Status, len(results))
	}
	for _, r := range results {
		if r.Status != store.TestCancelled {
			t.Errorf("scenario %q saved %s, want %s", r.Scenario, r.Status, store.TestCancelled)
		}
	}
}
