package durable

import (
	"errors"

	"github.com/ensemble-run/ensemble/internal/shell"
)

// The refusals of this package each carry what to do about them, their
// Hint, written here once for every front door: the command line, the
// inspector and the server print it after the error (WithHint).
//
// A line of a hint indented by two spaces is a command, written without
// the program's name (resume FILE): a command-line door puts its name
// before it.

// Hint is the hint of the first error of err's chain that has one, or "".
func Hint(err error) string {
	var h interface{ Hint() string }
	if errors.As(err, &h) {
		return h.Hint()
	}
	return ""
}

// WithHint is err's message followed, on a line of its own, by its hint
// when it has one.
func WithHint(err error) string {
	if h := Hint(err); h != "" {
		return err.Error() + "\n" + h
	}
	return err.Error()
}

// Hint says how to go on with the run, or to start another.
func (e *UnfinishedError) Hint() string {
	if e.ID == "" {
		return "continue it with\n  resume " + shell.Quote(e.Path) + "\nor remove the file to start over"
	}
	return "continue it with\n  resume " + shell.Quote(e.Path) + " --run-id " + shell.Quote(e.ID) + "\nor start a new run with another --run-id"
}

// Hint says that --force resumes anyway.
func (e *ChangedFilesError) Hint() string {
	return "resuming would continue the run with a different workflow; use --force to resume anyway"
}

// budgetSpent is the type of ErrBudgetSpent, for its hint.
type budgetSpent struct{}

func (budgetSpent) Error() string { return "the run stopped because a budget was spent" }

// Hint says to raise a cap: resuming as it is would stop again.
func (budgetSpent) Hint() string {
	return "resuming as it is would replay the stopped turn and stop again: " +
		"raise the run's cap with --max-cost, --max-tokens or --max-requests, or raise the file's limits and resume with --force"
}
