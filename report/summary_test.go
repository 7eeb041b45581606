package report

import (
	"strings"
	"testing"

	"github.com/ensemble-run/ensemble/engine"
)

// TestSummarySaysWhyARunStoppedEarly: a run that did not simply complete
// says what stopped it and what to change.
func TestSummarySaysWhyARunStoppedEarly(t *testing.T) {
	t.Parallel()
	for reason, want := range map[string]string{
		engine.Completed:     "",
		engine.MaxTotalTurns: "pass --max-turns",
		engine.Timeout:       "pass --timeout",
		engine.Cancelled:     "ensemble resume FILE",
	} {
		var b strings.Builder
		Summary(&b, &engine.Result{Ensemble: "e", CompletionReason: reason, AgentExecutionCount: map[string]int{}}, nil)
		lines := strings.Split(b.String(), "\n")
		hint := strings.HasPrefix(lines[2], "  (")
		if hint != (want != "") || !strings.Contains(lines[2], want) {
			t.Errorf("%s: %q", reason, b.String())
		}
	}
}
