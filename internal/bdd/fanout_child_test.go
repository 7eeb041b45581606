package bdd

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestFanOutChildSteps: steps name a fan-out's children by path, one
// instance's (`analyst[1]/think`) or every instance's (`analyst/think`),
// both to inject responses and to count executions.
func TestFanOutChildSteps(t *testing.T) {
	dir := t.TempDir()
	for name, body := range map[string]string{
		"e.yaml": `name: e
models:
  m: {provider: openai, model: m, api_key_env: NO_SUCH_KEY_FOR_TESTS}
agents:
  - name: lister
    ask: "Items?"
  - name: analyst
    dependencies: [lister]
    ensemble: child.yaml
    output: think
    fan_out: {over: "context.lister.items"}
`,
		"child.yaml": "name: child\nagents:\n  - name: think\n    model_profile: m\n    prompt: Think.\n",
	} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	s := NewScenario(dir, Options{})
	if err := s.givenEnsemble("e.yaml"); err != nil {
		t.Fatal(err)
	}
	for _, step := range [][2]string{
		{"lister", `{"items": ["a", "b", "c"]}`},
		{"analyst/think", "shared 1"}, {"analyst/think", "shared 2"}, {"analyst/think", "shared 3"},
		{"analyst[1]/think", "own"},
	} {
		if err := s.givenResponds(step[0], step[1]); err != nil {
			t.Fatalf("%s: %v", step[0], err)
		}
	}
	if err := s.givenResponds("lister[0]/think", "x"); err == nil || !strings.Contains(err.Error(), `no agent "lister[0]/think"`) {
		t.Errorf("an instance of an agent without fan_out: %v", err)
	}
	if err := s.whenRuns(context.Background()); err != nil {
		t.Fatal(err)
	}
	for i, err := range []error{
		s.thenReason("completed"),
		s.thenOutputIs("analyst", `["shared 1","own","shared 3"]`),
		s.thenRanTimes("analyst/think", 3),
		s.thenRanTimes("analyst[1]/think", 1),
	} {
		if err != nil {
			t.Errorf("check %d: %v", i, err)
		}
	}
}
