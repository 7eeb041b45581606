package bdd

import (
	"fmt"
	"strings"

	"github.com/ensemble-run/ensemble/engine"
	"github.com/ensemble-run/ensemble/internal/report"
)

// expectationsHeld fails a scenario whose run ended with an expectation of
// the file's expect: false (docs/testing.md#paths-and-scenarios): the file's
// verdict holds in its tests too, unless a step asked for that ending
// (the completion reason expectation_failed, or exit code 8).
func (s *Scenario) expectationsHeld() error {
	if !s.ran || s.result == nil || s.result.CompletionReason != engine.ExpectationFailed || s.expectedFailure {
		return nil
	}
	return fmt.Errorf("the run ended expectation_failed:%s", s.expectationsNote())
}

// expectationsNote lists the run's failed expectations and the values they
// read, to explain an unexpected outcome.
func (s *Scenario) expectationsNote() string {
	if s.result == nil {
		return ""
	}
	var b strings.Builder
	for _, x := range s.result.Expectations {
		if !x.Held {
			b.WriteString("\n  " + report.ExpectationText(x, 200))
		}
	}
	return b.String()
}
