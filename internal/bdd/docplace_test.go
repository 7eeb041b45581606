package bdd

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cucumber/godog"
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

// A kind is named with its article: "an LLM agent", "an ask agent".
func TestKindArticle(t *testing.T) {
	t.Parallel()
	for kind, want := range map[string]string{"llm": "an LLM", "LLM": "an LLM", "ask": "an ask", "script": "a script", "ensemble": "an ensemble", "dispatch": "a dispatch"} {
		if got := kindArticle(kind); got != want {
			t.Errorf("kindArticle(%q) = %q, want %q", kind, got, want)
		}
	}
	s := NewScenario(t.TempDir(), Options{})
	if err := s.givenInlineEnsemble(&godog.DocString{Content: "name: k\nmodels:\n  m: {provider: openai, model: m, base_url: http://127.0.0.1:1/v1}\nagents:\n  - {name: a, model_profile: m, prompt: hi}\n"}); err != nil {
		t.Fatal(err)
	}
	if err := s.thenKind("a", "script"); err == nil || err.Error() != `agent "a" is an LLM agent, want a script agent` {
		t.Errorf("the error: %v", err)
	}
}
