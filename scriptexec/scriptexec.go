// Package scriptexec runs the process of a script agent or of a tool the
// way the built-in kinds do (docs/semantics.md#script-agents): in the
// ensemble file's folder, with the parent's environment less the model
// profiles' API keys, ENSEMBLE_AGENT, ENSEMBLE_TURN and ENSEMBLE_EXECUTION
// set, its stdout capped and the tail of its stderr kept, and its process
// group stopped with it. It is part of the public API: a kind written
// outside this module runs scripts with it.
package scriptexec

import "github.com/ensemble-run/ensemble/internal/proc"

// What to run and what came of it.
type (
	// Spec is what ExecScript runs: Path, Stdin, Timeout and MaxOutput
	// (0: DefaultMaxOutput); ExecScript sets Dir and Env, and Redact and Hold
	// from the run's secrets.
	Spec = proc.Spec
	// Result is what a process wrote: Stdout and the tail of Stderr.
	Result = proc.Result
)

// How a script or tool process fails (package internal/proc starts them).
type (
	ExitError        = proc.ExitError
	TimeoutError     = proc.TimeoutError
	CancelledError   = proc.CancelledError
	OutputLimitError = proc.OutputLimitError
	InterpreterError = proc.InterpreterError
)

// Limits of a script or tool process.
const (
	// DefaultMaxOutput is the stdout limit of a script or tool (docs/semantics.md#script-agents).
	DefaultMaxOutput = proc.DefaultMaxOutput
	// StderrTail is how much of the end of stderr is kept.
	StderrTail = proc.StderrTail
)
