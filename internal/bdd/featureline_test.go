package bdd

import (
	"path/filepath"
	"strings"
	"testing"
)

// A feature file with a line longer than the Gherkin parser reads is a
// usage error naming the file and the line, not a panic; a line just
// short enough runs.
func TestLongFeatureLine(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		n    int
		want int
	}{
		{"too long", maxFeatureLine + 1, ExitUsage},
		{"just short enough", maxFeatureLine - len(`    Then the output of agent "a" is ""`) - 1, ExitFailed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			long := strings.Repeat("x", max(tc.n, 0))
			if tc.want != ExitUsage {
				long = `    Then the output of agent "a" is "` + strings.Repeat("x", tc.n) + `"`
			}
			dir := writeTempFiles(t, map[string]string{
				"e.yaml":    "name: e\nagents:\n  - {name: a, script: 'echo hi'}\n",
				"a.feature": "Feature: f\n  Scenario: s\n    Given the ensemble \"e.yaml\"\n    When the ensemble runs\n" + long + "\n",
			})
			o := runRepeats(t, RunOptions{Paths: []string{filepath.Join(dir, "a.feature")}})
			if o.code != tc.want {
				t.Fatalf("exit %d, want %d: %v\n%.500s", o.code, tc.want, o.err, o.out)
			}
			if tc.want == ExitUsage && (o.err == nil || !strings.Contains(o.err.Error(), "a.feature:5: the line is longer than 65535 bytes")) {
				t.Fatalf("the error: %v", o.err)
			}
		})
	}
}

// A feature file that starts with a byte order mark is a usage error that
// says so, not the parser's list of every line it did not expect.
func TestFeatureFileWithABOM(t *testing.T) {
	t.Parallel()
	dir := writeTempFiles(t, map[string]string{
		"e.yaml":    "name: e\nagents:\n  - {name: a, script: 'echo hi'}\n",
		"a.feature": "\xef\xbb\xbfFeature: f\n  Scenario: s\n    Given the ensemble \"e.yaml\"\n    When the ensemble runs\n",
	})
	o := runRepeats(t, RunOptions{Paths: []string{dir}})
	want := "a.feature:1: the file starts with a byte order mark (U+FEFF)"
	if o.code != ExitUsage || o.err == nil || !strings.Contains(o.err.Error(), want) || strings.Contains(o.err.Error(), "expected:") {
		t.Fatalf("exit %d, %v; want %d with %q alone", o.code, o.err, ExitUsage, want)
	}
}
