package batch

import "github.com/ensemble-run/ensemble/internal/shell"

// The refusals of a saved batch carry what to do about them, as durable's
// do (durable.Hint): a line indented by two spaces is a command without
// the program's name.

// Hint says how to finish the batch, or to start another.
func (e *ExistsError) Hint() string {
	return "finish it with\n  batch --resume " + shell.Quote(e.Path) + " --batch-id " + shell.Quote(e.ID) + "\nor start a new one with another --batch-id"
}

// Hint says that --force resumes anyway.
func (e *ChangedError) Hint() string {
	return "resuming would finish it with a different workflow or inputs; use --force to resume anyway"
}
