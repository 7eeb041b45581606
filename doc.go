// Package ensemble is the module's front page: it holds no code, and names
// the packages that make up the public API of the Go library behind the
// ensemble command, which runs multi-agent workflows declared in YAML.
//
// Every package of the module outside internal/ and cmd/ is public, but
// for the test and tool packages (docs, features, scripts, ensemble/fuzz),
// which export nothing: the exported names of the packages below are the
// API, kept for callers outside this module. The
// packages under internal/ (the injected responses, the conditions, the
// report, the inspector, the commands' helpers and the rest) are the
// machinery behind them, free to change. The public packages are:
//
//   - session: where a Go program starts. Load reads and checks an
//     ensemble file (every problem with FILE:LINE:COL), Open assembles the
//     runners of every kind, the injected responses, the run's services
//     and limits, and Start, Resume and Run run it. Responses,
//     ParseResponses and LoadResponses read a responses file.
//   - durable: runs kept in a state database across processes, to resume
//     after a wait for a person or a kill; store is that database.
//   - engine: the turns of a run; its Result is what a run gave (the
//     records, the final state, why it ended).
//   - ensemble: the ensemble file format, its types, loading and
//     validation; schema: its JSON Schema.
//   - state: a run's state and records, as saved and read back; events:
//     what a run tells its observers as it goes.
//   - agent: the kind contract. A Kind decodes its fields and builds the
//     Runner of its agents from a Host; a Request is one execution, a
//     Result what it gave.
//   - kinds: the registry of kinds; Builtin lists the built-in ones
//     (kinds/script, kinds/llm, kinds/ask, kinds/ensemble), and Register
//     adds a kind of your own beside them.
//   - scriptexec: runs a script the way the built-in kinds do (folder,
//     environment less the API keys, output cap, process group), for a
//     kind written outside the module; agentpath: the agents of child
//     ensembles and fan-out instances by path (`review/critic`,
//     `analyst[1]/think`), and their records.
//   - serve: the HTTP server of ensemble serve; temporalengine: runs as
//     Temporal workflows (not built with the notemporal tag).
//
// A new kind of agent is a type implementing agent.Kind, registered on
// kinds.Builtin() and passed as the Kinds of session.LoadOptions and
// session.Options; its runner may start scripts with scriptexec.ExecScript
// and read agent paths with agentpath. The example of this package does
// so, with public packages only. docs/development.md describes the
// packages and their rules.
package ensemble
