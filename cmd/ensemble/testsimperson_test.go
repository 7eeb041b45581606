package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ensemble-run/ensemble/internal/fakemodel"
)

// A simulated person of `ensemble test` is played by its profile's model,
// without --live (docs/testing.md#simulated-people): the command's
// scenarios call models through the kinds' own runners, and the person's
// requests are counted apart from the run's.
func TestTestSimulatedPersonCallsItsModel(t *testing.T) {
	t.Parallel()
	model := fakemodel.New(t, fakemodel.Text(`{"approved": true}`), fakemodel.WithUsage(10, 5))
	dir := t.TempDir()
	for name, content := range map[string]string{
		"e.yaml": `name: review
models:
  small: {provider: openai, model: m, base_url: "${TEST_LLM_URL}"}
agents:
  - {name: draft, script: draft.sh}
  - {name: reviewer, ask: "Approve the draft?", dependencies: [draft]}
  - name: publish
    script: draft.sh
    dependencies: [{agent_name: reviewer, condition: "context.reviewer.approved == true"}]
`,
		"draft.sh": "#!/bin/sh\ncat >/dev/null\necho '\"a draft\"'\n",
		"person.feature": `Feature: a simulated person
  Scenario: the person approves
    Given the ensemble "e.yaml"
    And ask agent "reviewer" is answered by a simulated person with model profile "small", the goal "Approve a draft" and at most 2 answers
    When the ensemble runs
    Then the completion reason is "completed"
    And agent "publish" ran 1 time
    And the simulated people made 1 model request
    And the run made at most 0 model requests
`,
	} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	o := ensembleEnv(t, map[string]string{"TEST_LLM_URL": model.URL()}, "test", "--no-color", dir)
	if o.code != 0 {
		t.Fatalf("exit %d, want 0:\n%s\n%s", o.code, o.stdout, o.stderr)
	}
	if !strings.Contains(o.stderr, "simulated people: 1 model request") {
		t.Errorf("stderr does not count the person's request:\n%s", o.stderr)
	}
	if model.Count() != 1 {
		t.Errorf("the model got %d requests, want 1 (the person's answer)", model.Count())
	}
}
