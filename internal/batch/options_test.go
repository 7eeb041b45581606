package batch

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/ensemble-run/ensemble/session"
	"github.com/ensemble-run/ensemble/state"
)

// A resumed batch's runs get the options its spec kept: limits, budget,
// responses and live agents, and never ask nor wait.
func TestSpecSessionOptions(t *testing.T) {
	t.Parallel()
	e, err := session.Load(filepath.Join("..", "..", "session", "testdata", "release.yaml"), nil, session.LoadOptions{LookupEnv: func(string) (string, bool) { return "", false }})
	if err != nil {
		t.Fatal(err)
	}
	resp := filepath.Join(t.TempDir(), "responses.yaml")
	if err := os.WriteFile(resp, []byte("writer: [\"A note.\"]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	spec := &Spec{Options: state.Options{MaxTurns: 7, Parallel: 2, MaxRequests: 3}, Live: []string{"writer"},
		Responses: &state.FileRef{Path: resp}}
	spec.Options.SetTimeout(90 * time.Second)
	o, err := spec.SessionOptions(e)
	if err != nil {
		t.Fatal(err)
	}
	l := o.Limits
	if l.MaxTurns != 7 || l.Parallel != 2 || l.Timeout != 90*time.Second || l.Budget == nil || l.Budget.MaxRequests != 3 {
		t.Errorf("limits %+v", l)
	}
	if !o.Ask.Batch || o.Ask.Suspend || o.Models.Responses == nil || o.Models.ResponsesFile != resp || len(o.Models.Live) != 1 {
		t.Errorf("options %+v", o)
	}
	// No caps: no budget; a responses file that is gone: its error.
	spec = &Spec{Responses: &state.FileRef{Path: filepath.Join(t.TempDir(), "gone.yaml")}}
	if _, err := spec.SessionOptions(e); err == nil {
		t.Error("a responses file that is gone loaded")
	}
	spec.Responses = nil
	if o, err := spec.SessionOptions(e); err != nil || o.Limits.Budget != nil {
		t.Errorf("no caps: budget %+v, %v", o.Limits.Budget, err)
	}
}
