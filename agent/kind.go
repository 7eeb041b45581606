package agent

import (
	"context"

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
	// Secrets are values redacted from everything a kind returns or
	// streams, as the keys of the ensemble's profiles are: a server's own
	// (its token, the keys of the other files it serves).
	Secrets []string
	// What is one kind's alone (the ask kind's terminal, the llm kind's
	// streaming) is an option of that kind, set where the kinds are wired
	// (kinds.Registry.With).

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
