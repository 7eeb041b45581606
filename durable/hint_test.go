package durable_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/ensemble-run/ensemble/durable"
)

// Each refusal of a resume carries its hint, found through wrapping, and
// WithHint puts it on a line after the error.
func TestHints(t *testing.T) {
	t.Parallel()
	changed := &durable.ChangedFilesError{Changed: []error{errors.New("the ensemble file e.yaml has changed")}}
	for _, tc := range []struct {
		name string
		err  error
		want []string
	}{
		{"a spent budget", durable.ErrBudgetSpent, []string{"raise the run's cap with --max-cost, --max-tokens or --max-requests", "resume with --force"}},
		{"changed files", changed, []string{"different workflow", "use --force"}},
		{"a JSON file's unfinished run", &durable.UnfinishedError{Path: "my run.json", Ensemble: "e"}, []string{"\n  resume 'my run.json'\n", "remove the file"}},
		{"a database's unfinished run", &durable.UnfinishedError{Path: "r.db", ID: "a1", Ensemble: "e"}, []string{"\n  resume r.db --run-id a1\n", "another --run-id"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			wrapped := fmt.Errorf("--state: %w", tc.err)
			h := durable.Hint(wrapped)
			for _, w := range tc.want {
				if !strings.Contains(h, w) {
					t.Errorf("hint %q lacks %q", h, w)
				}
			}
			if got := durable.WithHint(wrapped); got != wrapped.Error()+"\n"+h {
				t.Errorf("WithHint: %q", got)
			}
		})
	}
	if h := durable.Hint(errors.New("other")); h != "" {
		t.Errorf("an error without a hint has %q", h)
	}
	if durable.WithHint(durable.ErrPick) != durable.ErrPick.Error() {
		t.Error("WithHint changed an error without a hint")
	}
}
