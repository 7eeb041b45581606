package agent

import (
	"context"
	"io"

	"github.com/ensemble-run/ensemble/ensemble"
)

// Kind is one kind of agent, supplied whole by its own package: its fields
// and their decoding (ensemble.Kind), how an agent of the kind is run
// (Runner), and what the rest of the program asks of it instead of
// switching on kinds (the questions of capabilities.go: Guarded, AsksHuman,
// Children, Shaper...). Package kinds lists the kinds a program knows.
type Kind interface {
	// ensemble.Kind is the kind's name, its fields and their decoding.
	ensemble.Kind
	// Runner returns the runner of the kind's agents, built from h.
	Runner(h *Host) Runner
}

// Host is what the program running the agents gives the kinds' runners.
// The zero value is a program with no terminal and the process's
// environment.
type Host struct {
	// LookupEnv finds API keys and the like; nil means os.LookupEnv.
	LookupEnv func(string) (string, bool)
	// Environ is the environment scripts inherit; nil means os.Environ.
	Environ func() []string
	// Stream asks model replies to be streamed as text_delta events.
	Stream bool
	// In and Out are the terminal a human answers on; Interactive is false
	// when In is not one (CI, a pipe).
	In          io.Reader
	Out         io.Writer
	Interactive bool
	// Suspend is set when the run can wait (a durable run, a test): a
	// question with no answer ends the run awaiting input instead of
	// failing (docs/semantics.md#ask-agents-that-wait). NoInput never asks
	// at the terminal (--no-input). The answers given to resume are the
	// run's (Services.Answers).
	Suspend bool
	NoInput bool
	// Batch: the run is one of a batch (ensemble batch), whose runs never
	// ask at the terminal nor wait for an answer (docs/cli.md#ensemble-batch).
	Batch bool

	// Set by the registry that builds the runners, for a kind whose agents
	// run agents of any kind (a nested ensemble): Kinds are the kinds it
	// knows, to load a file with, and Dispatch runs any agent with the
	// runner of its kind.
	Kinds    []ensemble.Kind
	Dispatch Runner
}

// Simulator is a runner that can also play an agent with a model profile
// and a prompt: a simulated user (docs/testing.md#the-responses-file).
type Simulator interface {
	Simulate(ctx context.Context, req *Request, modelProfile, prompt string) *Result
}
