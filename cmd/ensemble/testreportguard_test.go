package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A --format report file that is a file the test reads (a feature file,
// a YAML file) is refused before anything is created: godog would have
// emptied it at once.
func TestTestReportOverAFeatureIsRefused(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	feature := filepath.Join(dir, "a.feature")
	text := "Feature: a\n  Scenario: s\n    Given the turn limit is 3\n"
	ens := filepath.Join(dir, "ensemble.yaml")
	for path, body := range map[string]string{feature: text, ens: "name: x\nagents:\n  - name: a\n    ask: hi\n"} {
		if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct{ format, want string }{
		{"pretty,junit:" + feature, "format junit: " + feature + " is a feature file of the test: the report would overwrite it"},
		{"cucumber:" + ens, "format cucumber: " + ens + " is a YAML file"},
	} {
		o := ensembleCmd(t, "", "test", "--format", tc.format, dir)
		if o.code != 2 || !strings.Contains(o.stderr, tc.want) {
			t.Errorf("--format %s: exit %d %q, want 2 and %q", tc.format, o.code, o.stderr, tc.want)
		}
	}
	if b, _ := os.ReadFile(feature); string(b) != text {
		t.Errorf("the feature file was overwritten: %q", b)
	}
}
