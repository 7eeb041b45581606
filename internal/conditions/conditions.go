// Package conditions compiles and evaluates dependency conditions: expr
// expressions checked once at load time against a typed environment, required
// to be boolean, and run in a sandbox (docs/semantics.md#conditions). The
// same language and sandbox serve a dependency's select, a fan-out's over
// and the placeholders of an agent's templates ([Template]).
//
// # Language
//
// A condition is an expr expression (https://expr-lang.org/docs/language-definition)
// whose result is a boolean. It sees exactly these names; any other name is a
// compile error:
//
//	context      map   accumulated_context: latest successful output per state key
//	turn_count   int   turns completed
//	executions   map   agent name → executions so far (failed ones included)
//	history      list  conversation_history records: maps with every field of
//	                   docs/cli.md#the-result (turn_number, agent_name, execution, input_data,
//	                   output_data, error, execution_time, timestamp,
//	                   stop_reason, usage, stderr), plus status ("ok" or
//	                   "failed") and, on a fan-out's record, instances (its
//	                   instances' records, in item order)
//	input        string the run's input
//
// Lists and maps compare in depth, numbers by value at every depth:
// `context.a == {'n': 1}` holds when the output is {"n": 1.0}, as
// `context.a.n == 1` does (expr alone compares maps with
// reflect.DeepEqual). The guard rewrites ==, != and in whose operands may be
// lists or maps into functions that do so (equal.go).
//
// Context values are untyped (any), so `context.x.y` is checked at run time.
// `context.x?.y ?? false` is the idiom for "maybe missing"; `history[-1]` is the
// latest record. A read of a key its object does not have gives nil; an
// evaluation whose Env.Reads is set notes it there (reads.go), unless the
// read is through ?. or on the left of ??. A condition whose static type is unknown (for example
// `context.reviewer.approved`) is accepted at compile time and must produce a
// boolean at run time.
//
// # Sandbox
//
// All of expr's operators and builtins are available except the ones that
// read the clock, the process environment (the local time zone) or files
// (the time zone database): `now`, `date` and `timezone` are disabled. `$env`
// is rejected. Nothing else in the language can reach outside: there is no
// I/O, the environment holds plain data, and conditions cannot define functions.
//
// Evaluation is bounded:
//   - size: at most [MaxLength] bytes and [MaxNodes] syntax nodes per
//     condition (compile errors);
//   - memory: expr's VM budget ([MaxMemory] units: array/map elements and
//     range sizes) plus a byte budget ([MaxBytes]) charged by everything that
//     builds strings or collections (`+` on strings, repeat, replace, join,
//     string, toJSON, fromJSON, split, upper, …). Operations that could
//     amplify their input (repeat, replace, join, string, toJSON, flatten,
//     concat) are charged before they allocate;
//   - work: at most [MaxSteps] units of work per evaluation: one per
//     evaluation of a predicate body (`all`, `filter`, `map`, `reduce`, …),
//     the work of printing values (string, toJSON), and one per value
//     compared by a comparison in depth (below).
//
// Exceeding a budget is a run-time error ([ErrMemoryBudget], [ErrStepBudget]):
// the caller counts the condition as false and reports a warning.
//
// Evaluation is interruptible: [Program.EvalContext] checks its context
// every 256 units of work (and at every metered allocation) and stops with
// an error wrapping the context's error. Printing a value (string, toJSON)
// is charged before it is done: one unit per value it holds and 8 per map
// entry (maps are printed sorted), so one call cannot print more than the
// work budget allows.
package conditions

import (
	"errors"

	"github.com/expr-lang/expr/vm"
)

// Limits of the sandbox.
const (
	MaxLength = 16 << 10  // bytes of source per condition
	MaxNodes  = 2000      // syntax nodes per condition
	MaxMemory = 1_000_000 // expr VM memory budget (elements) per evaluation
	MaxBytes  = 32 << 20  // bytes of strings and collections built per evaluation
	MaxSteps  = 1_000_000 // predicate-body evaluations per evaluation
)

// Disabled lists the expr builtins that are not available in conditions.
var Disabled = []string{"now", "date", "timezone"}

var (
	// ErrMemoryBudget is wrapped by run-time errors of conditions that exceed
	// MaxMemory or MaxBytes.
	ErrMemoryBudget = errors.New("memory budget exceeded")
	// ErrStepBudget is wrapped by run-time errors of conditions that exceed
	// MaxSteps.
	ErrStepBudget = errors.New("step budget exceeded")
)

// Env is the typed environment a condition sees (docs/semantics.md#conditions).
//
// It must have no exported methods: expr would expose them to conditions.
type Env struct {
	Context    map[string]any `expr:"context"`
	TurnCount  int            `expr:"turn_count"`
	Executions map[string]int `expr:"executions"`
	History    []any          `expr:"history"`
	Input      string         `expr:"input"`
	// Reads, when set, collects the reads of missing keys of the
	// evaluations over this environment (reads.go); conditions cannot name it.
	Reads *Reads `expr:"-"`
}

// Program is a compiled condition. It is immutable and safe for concurrent use.
type Program struct {
	Source string
	// ContextKeys are the top-level keys of context the condition names
	// (context.x, context?.x, context["x"]), in source order.
	ContextKeys []ContextKey
	// ExecutionKeys are the agents whose execution count the condition
	// reads (executions.x, executions["x"]), in source order.
	ExecutionKeys []ContextKey
	// ContextFields are the fields of context keys the condition reads
	// (context.x.a, context.x?.a.b), in source order: one for each member
	// access with a constant name below a context key.
	ContextFields []ContextField
	// OutputFields are the fields of output a select reads (output.a.b is
	// [a b]), in source order, each at its last field.
	OutputFields []ContextField
	// Comparisons are the comparisons of values read from context or
	// output with literals, in source order (literals.go).
	Comparisons []Comparison
	// UsesHistory is whether the condition names history: the environment
	// of one that does not may leave Env.History nil (building the view of
	// a long history costs; docs/performance.md).
	UsesHistory bool
	prog        *vm.Program
}

// ContextKey is a key of context named by a condition, at a 1-based line and
// column of its source.
type ContextKey struct {
	Name         string
	Line, Column int
}

// ContextField is a member access below a context key: Path is the key then
// the fields (context.x.a.b is [x a b]), and Line and Column are those of
// its last field in the source.
type ContextField struct {
	Path         []string
	Line, Column int
}
