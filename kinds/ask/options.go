package ask

import "io"

// Options are the ask kind's own options (Kind.Options): the terminal a
// person answers on, and what a question that cannot be asked there does.
// The zero value has no terminal: a question without a response fails.
type Options struct {
	// In and Out are the terminal a human answers on; Interactive is false
	// when In is not one (CI, a pipe).
	In          io.Reader
	Out         io.Writer
	Interactive bool
	// NoInput never asks at the terminal (--no-input).
	NoInput bool
	// Suspend is set when the run can wait (a durable run, a test): a
	// question with no answer ends the run awaiting input instead of
	// failing (docs/semantics.md#ask-agents-that-wait). The answers given
	// to resume are the run's (agent.Services.Answers).
	Suspend bool
	// Batch: the run is one of a batch (ensemble batch), whose runs never
	// ask at the terminal nor wait for an answer (docs/cli.md#ensemble-batch).
	Batch bool
}
