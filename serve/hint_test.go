package serve_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ensemble-run/ensemble/durable"
)

// An answer to a run whose ensemble file changed since it was saved is
// refused with the hint the durable error carries, as every door prints it.
func TestAnswerRefusalCarriesTheHint(t *testing.T) {
	t.Parallel()
	s := startServer(t, ensembles(t), nil)
	r := s.start(t, "ask", map[string]any{"input": "note"})
	if r.Status != "awaiting_input" {
		t.Fatalf("%+v", r)
	}
	yaml := filepath.Join(s.dir, "ask", "ensemble.yaml")
	b, err := os.ReadFile(yaml)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(yaml, append(b, "\n# changed\n"...), 0o644); err != nil {
		t.Fatal(err)
	}
	code, body, _ := s.do(t, "POST", "/v1/runs/"+r.RunID+"/answers", map[string]any{"approver": map[string]any{"approved": true}})
	if h := durable.Hint(&durable.ChangedFilesError{}); code != 409 || !strings.Contains(string(body), h) {
		t.Fatalf("answer after the file changed: %d %s, want 409 with %q", code, body, h)
	}
}
