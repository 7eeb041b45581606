package bdd

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"
)

// An outline whose Examples have no rows runs nothing: the test run warns
// of it, and when nothing else is selected it is a usage error that says
// so (it said "no scenario matches --tags" with no --tags given).
func TestRowlessOutline(t *testing.T) {
	t.Parallel()
	dir := writeTempFiles(t, map[string]string{
		"a.feature": "Feature: f\n  Scenario Outline: x <n>\n    Given the turn limit is <n>\n    Examples:\n      | n |\n\n" +
			"  @fine\n  Scenario: fine\n    Given the turn limit is 2\n",
	})
	f := filepath.Join(dir, "a.feature")
	want := f + `:2: Scenario Outline "x <n>" has no Examples rows: it runs nothing`
	for _, tc := range []struct {
		path, tags string
		code       int
		warn       bool
	}{
		{f, "", ExitPassed, true},
		{f, "@fine", ExitPassed, false},
		{f + ":2", "", ExitUsage, false},
	} {
		var out, stderr bytes.Buffer
		code, err := Run(RunOptions{Paths: []string{tc.path}, Tags: tc.tags, Format: "progress", Output: &out, Stderr: &stderr, NoColors: true})
		if code != tc.code {
			t.Fatalf("%s %s: exit %d, %v, want %d\n%s%s", tc.path, tc.tags, code, err, tc.code, out.String(), stderr.String())
		}
		if got := strings.Contains(stderr.String(), "warning: "+want); got != tc.warn {
			t.Errorf("%s %s: warned %v, want %v:\n%s", tc.path, tc.tags, got, tc.warn, stderr.String())
		}
		if tc.code == ExitUsage && (err == nil || !strings.Contains(err.Error(), "no scenario to run:\n"+want) || strings.Contains(err.Error(), "--tags")) {
			t.Errorf("%s: the error: %v", tc.path, err)
		}
	}
}
