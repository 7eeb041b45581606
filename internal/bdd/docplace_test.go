package bdd

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"
)

// The problems of an ensemble written in a doc string name their line of
// the feature file, before their line in the doc string; two steps with
// the same doc string are each named at their own place.
func TestInlineEnsembleProblemsNameTheFeatureLine(t *testing.T) {
	t.Parallel()
	doc := "      \"\"\"\n      name: inline\n      agents:\n        - name: a\n          script: x.sh\n      \"\"\"\n"
	dir := writeTempFiles(t, map[string]string{
		"a.feature": "Feature: f\n\n  Scenario: run\n    Given the ensemble:\n" + doc + "    When the ensemble runs\n\n" +
			"  Scenario: validate\n    When this ensemble is validated:\n" + doc + "    Then the ensemble is valid\n",
	})
	var out bytes.Buffer
	code, err := Run(RunOptions{Paths: []string{dir}, Format: "progress", Output: &out, Stderr: &out, NoColors: true})
	if code != ExitFailed || err != nil {
		t.Fatalf("exit %d, %v\n%s", code, err, out.String())
	}
	f := filepath.Join(dir, "a.feature")
	for _, want := range []string{
		f + `:9: doc string line 4, column 13: agent "a": script "x.sh" does not exist`,
		f + `:19: doc string line 4, column 13: agent "a": script "x.sh" does not exist`,
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("the report lacks %q:\n%s", want, out.String())
		}
	}
}
