package bdd

import (
	"fmt"
	"strings"

	"github.com/ensemble-run/ensemble/engine"
	"github.com/ensemble-run/ensemble/internal/report"
)

// The Then steps about the run as a whole: why it stopped, its exit code,
// its turns, errors and warnings.

func (s *Scenario) thenReason(want string) error {
	res, err := s.ranResult()
	if err != nil {
		return err
	}
	switch want {
	case engine.Completed, engine.MaxTotalTurns, engine.Timeout, engine.Cancelled, engine.AwaitingInput, engine.BudgetExceeded,
		engine.ExpectationFailed, engine.StrictWarning:
	default:
		return fmt.Errorf("%q is not a completion reason: use completed, max_total_turns, timeout, cancelled, awaiting_input, budget_exceeded, expectation_failed or strict_warning", want)
	}
	if res.CompletionReason != want {
		return fmt.Errorf("completion reason is %q, want %q%s%s", res.CompletionReason, want, s.errorsNote(), s.expectationsNote())
	}
	s.expectedFailure = s.expectedFailure || want == engine.ExpectationFailed
	return nil
}

// errorsNote lists the run's errors, to explain an unexpected outcome.
func (s *Scenario) errorsNote() string {
	if s.result == nil || len(s.result.Errors) == 0 {
		return ""
	}
	var b strings.Builder
	b.WriteString("\nthe run's errors:")
	for _, e := range s.result.Errors {
		fmt.Fprintf(&b, "\n  turn %d, %s: %s", e.TurnNumber, e.AgentName, cut(e.Message, 400))
	}
	return b.String()
}

func (s *Scenario) thenExitCode(want int) error {
	res, err := s.ranResult()
	if err != nil {
		return err
	}
	if got := res.ExitCode(); got != want {
		return fmt.Errorf("exit code is %d (completion reason %q), want %d%s%s", got, res.CompletionReason, want, s.errorsNote(), s.expectationsNote())
	}
	s.expectedFailure = s.expectedFailure || want == engine.ExitExpectation
	return nil
}

func (s *Scenario) thenRunFailed() error {
	res, err := s.ranResult()
	if err != nil {
		return err
	}
	if res.ExitCode() == 0 {
		return fmt.Errorf("the run succeeded (completion reason %q, exit code 0, no errors), want it to fail", res.CompletionReason)
	}
	return nil
}

func (s *Scenario) thenTurnCount(want int) error {
	res, err := s.ranResult()
	if err != nil {
		return err
	}
	if res.TurnCount != want {
		return fmt.Errorf("turn count is %d, want %d (agents ran in order %s)", res.TurnCount, want, quote(strings.Join(order(res), ", ")))
	}
	return nil
}

func (s *Scenario) thenNoErrors() error {
	res, err := s.ranResult()
	if err != nil {
		return err
	}
	if len(res.Errors) > 0 {
		return fmt.Errorf("the run has %s, want none:%s", report.Count(len(res.Errors), "error"), strings.TrimPrefix(s.errorsNote(), "\nthe run's errors:"))
	}
	return nil
}

func (s *Scenario) thenNoUnhandledErrors() error {
	res, err := s.ranResult()
	if err != nil {
		return err
	}
	var unhandled []string
	for _, e := range res.Errors {
		if !e.Handled {
			unhandled = append(unhandled, fmt.Sprintf("turn %d, %s: %s", e.TurnNumber, e.AgentName, e.Message))
		}
	}
	if len(unhandled) > 0 {
		return fmt.Errorf("the run has %s, want none:\n  %s", report.Count(len(unhandled), "unhandled error"), strings.Join(unhandled, "\n  "))
	}
	return nil
}

func (s *Scenario) thenLoadWarning(sub string) error {
	sub = unq(sub)
	e, err := s.ensemble()
	if err != nil {
		return err
	}
	var msgs []string
	for _, w := range e.Warnings {
		if strings.Contains(w.Message, sub) {
			return nil
		}
		msgs = append(msgs, w.Error())
	}
	if len(msgs) == 0 {
		return fmt.Errorf("the ensemble has no warnings, want one containing %s", quote(sub))
	}
	return fmt.Errorf("no warning of the ensemble contains %s; its warnings:\n  %s", quote(sub), strings.Join(msgs, "\n  "))
}

func (s *Scenario) thenNoLoadWarnings() error {
	e, err := s.ensemble()
	if err != nil {
		return err
	}
	if len(e.Warnings) > 0 {
		msgs := make([]string, len(e.Warnings))
		for i, w := range e.Warnings {
			msgs[i] = w.Error()
		}
		return fmt.Errorf("the ensemble has %s, want none:\n  %s", report.Count(len(msgs), "warning"), strings.Join(msgs, "\n  "))
	}
	return nil
}

func (s *Scenario) thenErrorCount(want int) error {
	res, err := s.ranResult()
	if err != nil {
		return err
	}
	if len(res.Errors) != want {
		return fmt.Errorf("the run has %s, want %d%s", report.Count(len(res.Errors), "error"), want, s.errorsNote())
	}
	return nil
}

func (s *Scenario) thenWarning(sub string) error {
	sub = unq(sub)
	res, err := s.ranResult()
	if err != nil {
		return err
	}
	var msgs []string
	for _, w := range res.Warnings {
		msg := fmt.Sprintf("agent %s, dependency %s, expression %s: %s", w.AgentName, w.Dependency, quote(w.Expression), w.Message)
		if strings.Contains(msg, sub) {
			return nil
		}
		msgs = append(msgs, msg)
	}
	if len(msgs) == 0 {
		return fmt.Errorf("the run has no warnings, want one containing %s", quote(sub))
	}
	return fmt.Errorf("no warning contains %s; the warnings:\n  %s", quote(sub), strings.Join(msgs, "\n  "))
}
