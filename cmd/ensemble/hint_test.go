package main

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/ensemble-run/ensemble/durable"
	"github.com/ensemble-run/ensemble/internal/batch"
)

// The command line prints each durable refusal with the hint the error
// carries (durable.Hint), its commands named with the program as the user
// typed it.
func TestStateErrorsPrintTheirHint(t *testing.T) {
	t.Parallel()
	s := &stdio{prog: "./ens"}
	for _, tc := range []struct {
		name string
		err  error
		want string // a command of the hint, with the program
	}{
		{"a JSON file's unfinished run", &durable.UnfinishedError{Path: "r.json", Ensemble: "e", Turns: 1}, "\n  ./ens resume r.json\n"},
		{"a database's unfinished run", &durable.UnfinishedError{Path: "r.db", ID: "x1", Ensemble: "e"}, "\n  ./ens resume r.db --run-id x1\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got := s.stateError("r.db", fmt.Errorf("wrapped: %w", tc.err), true).Error()
			h := durable.Hint(tc.err)
			if !strings.Contains(got, tc.want) || !strings.HasSuffix(got, strings.ReplaceAll(h, "\n  ", "\n  ./ens ")) {
				t.Errorf("printed %q, want the hint %q with %q", got, h, tc.want)
			}
		})
	}
	// A saved batch's refusals carry theirs too.
	exists := fmt.Errorf("--state: %w", &batch.ExistsError{Path: "my runs.db", ID: "b1"})
	if h := s.hint(exists); !strings.Contains(h, "\n  ./ens batch --resume 'my runs.db' --batch-id b1\n") || !strings.Contains(h, "another --batch-id") {
		t.Errorf("a batch that exists: %q", h)
	}
	if h := s.hint(&batch.ChangedError{Changes: []string{"the inputs"}}); !strings.Contains(h, "use --force") {
		t.Errorf("a batch whose files changed: %q", h)
	}
	if h := s.hint(errors.New("no hint")); h != "" {
		t.Errorf("a hint for an error without one: %q", h)
	}
}
