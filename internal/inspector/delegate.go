package inspector

// GoOn goes on with the runs the page answers and forks in place of the
// inspector: `ensemble serve` hands them to its run machinery, which keeps
// their events, calls their webhooks and answers each run once, whichever
// door the answer came by. An error with a method HTTPStatus() int is
// answered with that status.
type GoOn interface {
	// Answer gives answers to run id, given at its turn count turn (0:
	// unchecked), and goes on with it in the background.
	Answer(id string, answers map[string]string, turn int) error
	// Fork starts a run whose first turns are run id's up to turn, goes
	// on with it in the background, and returns its id.
	Fork(id string, turn int) (string, error)
}

// statusError is an error that carries its HTTP status (GoOn's).
type statusError interface{ HTTPStatus() int }
