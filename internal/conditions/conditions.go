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
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"

	"github.com/expr-lang/expr"
	"github.com/expr-lang/expr/ast"
	"github.com/expr-lang/expr/builtin"
	"github.com/expr-lang/expr/conf"
	"github.com/expr-lang/expr/file"
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

// CompileError is a condition that does not compile. Line and Column are
// 1-based and relative to the expression's source (Column counts characters);
// both are 0 when expr gave no position. Msg is one line.
type CompileError struct {
	Line   int
	Column int
	Msg    string
	What   string // "condition" (when empty) or "select"
}

func (e *CompileError) Error() string {
	what := cmp.Or(e.What, "condition")
	switch {
	case e.Line > 1:
		return fmt.Sprintf("%s (line %d, column %d of the %s)", e.Msg, e.Line, e.Column, what)
	case e.Column > 0:
		return fmt.Sprintf("%s (column %d of the %s)", e.Msg, e.Column, what)
	}
	return e.Msg
}

// RuntimeError is a condition that failed while evaluating. Column is 1-based
// (0 when unknown); Msg is one line. It unwraps to the underlying cause, so
// errors.Is(err, ErrMemoryBudget) works.
type RuntimeError struct {
	Column int
	Msg    string
	What   string // "condition" (when empty) or "select"
	cause  error
}

func (e *RuntimeError) Error() string {
	if e.Column > 0 {
		return fmt.Sprintf("%s (column %d of the %s)", e.Msg, e.Column, cmp.Or(e.What, "condition"))
	}
	return e.Msg
}

func (e *RuntimeError) Unwrap() error { return e.cause }

// Compile checks src once: it must parse, type-check against Env and be boolean.
// The error, if any, is a *CompileError.
func Compile(src string) (*Program, error) {
	return compile(src, "condition", Env{}, evalEnv{}, expr.AsBool())
}

// compile checks src against the names of checkEnv (Env's, and output for
// a select) and builds the guarded program against runEnv, the environment
// it is run with (checkEnv's names and the meter). what names the
// expression in messages.
func compile(src, what string, checkEnv, runEnv any, extra ...expr.Option) (*Program, error) {
	if strings.TrimSpace(src) == "" {
		return nil, &CompileError{Msg: "empty " + what, What: what}
	}
	if len(src) > MaxLength {
		return nil, &CompileError{Msg: fmt.Sprintf("%s is too long (%d bytes; at most %d)", what, len(src), MaxLength), What: what}
	}
	// First compile: the user's expression as written, for diagnostics that
	// name what the user wrote (the guarded program renames builtins).
	rej := &rejectEnv{}
	checked, err := expr.Compile(src, commonOptions(checkEnv, append(extra, expr.Patch(rej))...)...)
	if err != nil {
		ce := compileError(err)
		ce.What = what
		return nil, ce
	}
	if rej.found {
		line, col := position(src, rej.from)
		return nil, &CompileError{Line: line, Column: col, Msg: "unknown name $env", What: what}
	}
	// Second compile: the same expression with the sandbox's meters woven in.
	marks := &readMarks{}
	prog, err := expr.Compile(src, commonOptions(runEnv, append(extra, expr.Patch(markReads{marks}), expr.Patch(guard{marks: marks}), guardFunctions)...)...)
	if err != nil {
		// Not expected: the first compile accepted the expression.
		ce := compileError(err)
		ce.What = what
		return nil, ce
	}
	keys := &contextKeys{src: src}
	ast.Walk(new(checked.Node()), keys)
	slices.SortStableFunc(keys.found, func(a, b ContextKey) int { return cmp.Or(a.Line-b.Line, a.Column-b.Column) })
	slices.SortStableFunc(keys.fields, func(a, b ContextField) int { return cmp.Or(a.Line-b.Line, a.Column-b.Column) })
	slices.SortStableFunc(keys.output, func(a, b ContextField) int { return cmp.Or(a.Line-b.Line, a.Column-b.Column) })
	slices.SortStableFunc(keys.execs, func(a, b ContextKey) int { return cmp.Or(a.Line-b.Line, a.Column-b.Column) })
	return &Program{Source: src, ContextKeys: keys.found, ExecutionKeys: keys.execs, ContextFields: keys.fields, OutputFields: keys.output,
		Comparisons: comparisons(src), UsesHistory: keys.history, prog: prog}, nil
}

// Select is a dependency's select: an expression over the dependency's
// output (output) and the conditions' names, whose value is what the edge
// delivers (docs/semantics.md#choosing-what-an-edge-delivers). It is
// immutable and safe for concurrent use.
type Select struct {
	Program
}

// selectEnv is the names a select may use: the conditions' and output.
type selectEnv struct {
	Env
	Output any `expr:"output"`
}

// loopEnv is the names a loop's until and carry may use: a select's, and
// the iteration's outcome.
type loopEnv struct {
	selectEnv
	Status string `expr:"status"`
	Error  any    `expr:"error"`
}

// Outcome is how an iteration of a loop ended, which its until and carry
// see: status "ok" or "failed", and error, the failure's message (nil when
// ok).
type Outcome struct {
	Status string
	Error  any
}

// CompileLoop checks a loop's until or carry: a select that also sees
// status and error (EvalOutcome).
func CompileLoop(src string) (*Select, error) {
	p, err := compile(src, "select", loopEnv{}, evalEnv{})
	if err != nil {
		return nil, err
	}
	return &Select{*p}, nil
}

// EvalOutcome is EvalContext with an iteration's outcome (CompileLoop).
func (s *Select) EvalOutcome(ctx context.Context, env *Env, output any, o Outcome) (any, error) {
	return s.eval(ctx, env, output, o)
}

// CompileSelect checks a select expression once, as Compile does a
// condition; its value may be of any type.
func CompileSelect(src string) (*Select, error) {
	p, err := compile(src, "select", selectEnv{}, evalEnv{})
	if err != nil {
		return nil, err
	}
	return &Select{*p}, nil
}

// EvalContext runs the select in the sandbox over output. A run-time error
// is a *RuntimeError.
func (s *Select) EvalContext(ctx context.Context, env *Env, output any) (result any, err error) {
	return s.eval(ctx, env, output, Outcome{})
}

func (s *Select) eval(ctx context.Context, env *Env, output any, o Outcome) (result any, err error) {
	if err := ctx.Err(); err != nil {
		return nil, &RuntimeError{Msg: oneLine(err.Error()), What: "select", cause: err}
	}
	r := runnerPool.Get().(*runner)
	defer func() {
		if rec := recover(); rec != nil {
			result, err = nil, &RuntimeError{Msg: oneLine(fmt.Sprint(rec)), What: "select"}
		}
	}()
	if env != nil {
		r.env.Env = *env
	}
	r.env.Output, r.env.Status, r.env.Error = output, o.Status, o.Error
	r.meter = meter{bytes: MaxBytes, steps: MaxSteps, ctx: ctx, reads: r.env.Reads, source: strings.TrimSpace(s.Source)}
	r.vm.MemoryBudget = MaxMemory
	out, runErr := r.vm.Run(s.prog, &r.env)
	r.reset()
	runnerPool.Put(r)
	if runErr != nil {
		re := runtimeError(runErr, s.Source)
		re.What = "select"
		return nil, re
	}
	return out, nil
}

// contextKeys collects the constant keys of member accesses on context.
// It also notes whether the condition names history.
type contextKeys struct {
	src     string
	found   []ContextKey
	execs   []ContextKey
	fields  []ContextField
	output  []ContextField
	history bool
}

// memberPath is the path of constant names from the identifier root down
// to m (context.x.a is [x a] for root context); nil when m is not such a
// chain.
func memberPath(m *ast.MemberNode, root string) []string {
	var rev []string
	var n ast.Node = m
	for {
		if c, ok := n.(*ast.ChainNode); ok {
			n = c.Node
			continue
		}
		switch x := n.(type) {
		case *ast.MemberNode:
			key, ok := x.Property.(*ast.StringNode)
			if !ok {
				return nil
			}
			rev = append(rev, key.Value)
			n = x.Node
		case *ast.IdentifierNode:
			if x.Value != root {
				return nil
			}
			slices.Reverse(rev)
			return rev
		default:
			return nil
		}
	}
}

func (c *contextKeys) Visit(node *ast.Node) {
	if id, ok := (*node).(*ast.IdentifierNode); ok && id.Value == "history" {
		c.history = true
	}
	m, ok := (*node).(*ast.MemberNode)
	if !ok {
		return
	}
	if path := memberPath(m, "context"); len(path) > 1 {
		line, col := position(c.src, m.Property.Location().From)
		c.fields = append(c.fields, ContextField{Path: path, Line: line, Column: col})
	}
	if path := memberPath(m, "output"); len(path) > 0 {
		line, col := position(c.src, m.Property.Location().From)
		c.output = append(c.output, ContextField{Path: path, Line: line, Column: col})
	}
	id, ok := m.Node.(*ast.IdentifierNode)
	if !ok || (id.Value != "context" && id.Value != "executions") {
		return
	}
	if key, ok := m.Property.(*ast.StringNode); ok {
		line, col := position(c.src, m.Property.Location().From)
		k := ContextKey{Name: key.Value, Line: line, Column: col}
		if id.Value == "context" {
			c.found = append(c.found, k)
		} else {
			c.execs = append(c.execs, k)
		}
	}
}

// MustCompile is Compile that panics on error, for tests and fixed conditions.
func MustCompile(src string) *Program {
	p, err := Compile(src)
	if err != nil {
		panic(err)
	}
	return p
}

func commonOptions(env any, extra ...expr.Option) []expr.Option {
	opts := []expr.Option{expr.Env(env), expr.MaxNodes(MaxNodes)}
	for _, name := range Disabled {
		opts = append(opts, expr.DisableBuiltin(name))
	}
	return append(opts, extra...)
}

func compileError(err error) *CompileError {
	ce := &CompileError{Msg: oneLine(err.Error())}
	var fe *file.Error
	if errors.As(err, &fe) {
		ce.Msg = oneLine(fe.Message)
		if fe.Snippet != "" {
			ce.Line, ce.Column = fe.Line, fe.Column+1
		}
	}
	if ce.Msg == `unexpected token Operator("=")` {
		// a = b: the comparison is ==, assignment does not exist.
		ce.Msg += "; did you mean ==?"
	}
	if t, ok := strings.CutPrefix(ce.Msg, "expected bool, but got "); ok {
		ce.Msg = "condition must be boolean, but it is always " + typeWords(t)
	}
	if strings.Contains(ce.Msg, "exceeds maximum allowed nodes") {
		ce.Msg = fmt.Sprintf("condition is too large (more than %d syntax nodes)", MaxNodes)
	}
	if name, ok := strings.CutPrefix(ce.Msg, "unknown name "); ok && slices.Contains(Disabled, name) {
		ce.Msg = name + " is not available in conditions (no clock, environment or file access)"
	}
	return ce
}

// oneLine keeps the first line of a message, at most maxMessage bytes of it.
func oneLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = strings.TrimSpace(s[:i])
	}
	if len(s) > maxMessage {
		cut := maxMessage
		for cut > 0 && !utf8.RuneStart(s[cut]) {
			cut--
		}
		s = s[:cut] + "…"
	}
	return s
}

const maxMessage = 300

// position turns a rune offset into a 1-based line and column.
func position(src string, offset int) (line, col int) {
	line, col = 1, 1
	i := 0
	for _, r := range src {
		if i == offset {
			break
		}
		if r == '\n' {
			line, col = line+1, 1
		} else {
			col++
		}
		i++
	}
	return line, col
}

// rejectEnv finds `$env`, which would bypass the documented names.
type rejectEnv struct {
	found bool
	from  int // rune offset
}

func (r *rejectEnv) Visit(node *ast.Node) {
	if id, ok := (*node).(*ast.IdentifierNode); ok && id.Value == "$env" {
		if !r.found || id.Location().From < r.from {
			r.found, r.from = true, id.Location().From
		}
	}
}

// --- evaluation ---

// Eval is EvalContext with a context that is never cancelled.
func (p *Program) Eval(env *Env) (bool, error) {
	return p.EvalContext(context.Background(), env)
}

// EvalContext runs the program in the sandbox. A run-time error is returned
// (as a *RuntimeError) together with false; the caller treats the condition
// as false, unless the error wraps ctx's error: the evaluation was
// interrupted, and has no result. A nil program is the empty condition: true.
// EvalContext never panics and is safe for concurrent use; env is only read.
func (p *Program) EvalContext(ctx context.Context, env *Env) (result bool, err error) {
	if p == nil || p.prog == nil {
		return true, nil
	}
	if err := ctx.Err(); err != nil {
		return false, &RuntimeError{Msg: oneLine(err.Error()), cause: err}
	}
	r := runnerPool.Get().(*runner)
	defer func() {
		if rec := recover(); rec != nil {
			// Do not return a runner in an unknown state to the pool.
			result, err = false, &RuntimeError{Msg: oneLine(fmt.Sprint(rec))}
		}
	}()
	if env != nil {
		r.env.Env = *env
	}
	r.meter = meter{bytes: MaxBytes, steps: MaxSteps, ctx: ctx, reads: r.env.Reads, source: strings.TrimSpace(p.Source)}
	r.vm.MemoryBudget = MaxMemory
	out, runErr := r.vm.Run(p.prog, &r.env)
	r.reset()
	runnerPool.Put(r)
	if runErr != nil {
		return false, runtimeError(runErr, p.Source)
	}
	b, ok := out.(bool)
	if !ok {
		return false, &RuntimeError{Msg: fmt.Sprintf("condition must be boolean, but it returned %s", typeWords(typeName(out)))}
	}
	return b, nil
}

func typeName(v any) string {
	if v == nil {
		return "nil"
	}
	return reflect.TypeOf(v).String()
}

// typeWords names a Go type, as expr prints it, in the words of the
// documentation: a list, an object, a string, a number.
func typeWords(t string) string {
	switch {
	case t == "nil" || t == "unknown":
		return "nil"
	case strings.HasPrefix(t, "[]"):
		return "a list"
	case strings.HasPrefix(t, "map["):
		return "an object"
	case t == "string":
		return "a string"
	case t == "bool":
		return "a boolean"
	case strings.HasPrefix(t, "int") || strings.HasPrefix(t, "uint") || strings.HasPrefix(t, "float"):
		return "a number"
	}
	return t
}

// goTypes are the Go names of JSON values in expr's messages, and their
// names in the documentation.
var goTypes = strings.NewReplacer("map[string]interface {}", "object", "[]interface {}", "list", "float64", "number")

func runtimeError(err error, src string) *RuntimeError {
	var fe *file.Error
	if errors.As(err, &fe) {
		re := &RuntimeError{Msg: oneLine(fe.Message), cause: fe.Prev}
		if fe.Snippet != "" {
			re.Column = fe.Column + 1
		}
		if re.cause == nil && strings.Contains(re.Msg, ErrMemoryBudget.Error()) {
			re.cause = ErrMemoryBudget
		}
		// The cast of an untyped result to the boolean the condition must be.
		if t, ok := strings.CutPrefix(re.Msg, "invalid operation: bool("); ok && strings.HasSuffix(t, ")") && re.Column == 1 {
			re.Msg, re.Column = "condition must be boolean, but it returned "+typeWords(strings.TrimSuffix(t, ")")), 0
		}
		// A field of a string or a list: expr tries to make the name an index.
		if re.Msg == "invalid operation: int(string)" {
			if name := identifierAt(src, fe.Line, re.Column); name != "" {
				re.Msg = "cannot fetch " + name + " from a string or a list"
			}
		}
		if strings.HasPrefix(re.Msg, "cannot fetch ") && strings.HasSuffix(re.Msg, " from <nil>") {
			re.Msg = strings.TrimSuffix(re.Msg, "<nil>") + "nil (a missing value: write ?. and ?? where it may be missing)"
		}
		re.Msg = goTypes.Replace(re.Msg)
		return re
	}
	return &RuntimeError{Msg: oneLine(err.Error()), cause: err}
}

// identifierAt returns the identifier that starts at the 1-based line and
// character column of src, or "".
func identifierAt(src string, line, column int) string {
	lines := strings.Split(src, "\n")
	if line < 1 || line > len(lines) || column < 1 {
		return ""
	}
	runes := []rune(lines[line-1])
	end := column - 1
	for end < len(runes) && (runes[end] == '_' || unicode.IsLetter(runes[end]) || (end >= column && unicode.IsDigit(runes[end]))) {
		end++
	}
	if end <= column-1 {
		return ""
	}
	return string(runes[column-1 : end])
}

// runner is what one evaluation needs; runners are pooled, one per concurrent
// evaluation.
type runner struct {
	vm    vm.VM
	env   evalEnv
	meter meter
}

var runnerPool = sync.Pool{New: func() any {
	r := &runner{}
	r.env.m = &r.meter
	return r
}}

func (r *runner) reset() {
	r.env.Env, r.env.Output, r.env.Status, r.env.Error = Env{}, nil, "", nil
	r.meter.ctx, r.meter.reads = nil, nil
	clear(r.vm.Variables)
	clear(r.vm.Stack[:cap(r.vm.Stack)])
	r.vm.Stack = r.vm.Stack[:0]
}

// evalEnv is the environment of the guarded program: Env's names, plus the
// meter of the evaluation, which conditions cannot see (unexported) but the
// guard functions reach through `$env`.
type evalEnv struct {
	Env
	Output any    `expr:"output"` // a select's dependency output; conditions cannot name it
	Status string `expr:"status"` // a loop's iteration outcome (loopEnv); others cannot name them
	Error  any    `expr:"error"`
	m      *meter
}

type meter struct {
	bytes int // left
	steps int // left
	ctx   context.Context
	work  int // units of work since ctx was last checked
	// reads collects the misses (Env.Reads; nil: none are kept), each
	// noted with source, the expression evaluated.
	reads  *Reads
	source string
}

const (
	// pollEvery is how many units of work pass between two checks of the
	// evaluation's context.
	pollEvery = 256
	// mapEntryWork is the work of printing one map entry: fmt sorts the keys
	// through reflection, several times slower than printing a list element.
	mapEntryWork = 8
)

func (m *meter) charge(n int) error {
	if n < 0 || n > m.bytes {
		m.bytes = -1
		return ErrMemoryBudget
	}
	m.bytes -= n
	return m.poll(1)
}

// step counts n units of work against the step budget.
func (m *meter) step(n int) error {
	m.steps -= n
	if m.steps < 0 {
		if err := m.ctx.Err(); err != nil {
			return err // the run is ending anyway: say why
		}
		return ErrStepBudget
	}
	return m.poll(n)
}

// poll checks the context once every pollEvery units of work.
func (m *meter) poll(n int) error {
	m.work += n
	if m.work < pollEvery {
		return nil
	}
	m.work = 0
	return m.ctx.Err()
}

func meterOf(v any) *meter {
	switch e := v.(type) {
	case *evalEnv:
		return e.m
	case evalEnv:
		return e.m
	case *itemEvalEnv:
		return e.m
	case *expectEvalEnv:
		return e.m
	case *requestEvalEnv:
		return e.m
	}
	panic("conditions: guard called without its environment")
}

// --- the guard: meters woven into the program at compile time ---

// Builtins that build a result at most linear in their inputs: charged after.
var chargedAfter = map[string]bool{
	"trim": true, "trimPrefix": true, "trimSuffix": true, "upper": true, "lower": true,
	"split": true, "splitAfter": true, "toBase64": true, "fromBase64": true, "fromJSON": true,
	"keys": true, "values": true, "toPairs": true, "fromPairs": true, "reverse": true,
	"uniq": true, "sort": true, "take": true,
}

// Builtins whose result can be much larger than their inputs: replaced by
// guarded versions that charge before allocating.
var guarded = map[string]func(m *meter, args []any) (any, error){
	"repeat":  guardRepeat,
	"replace": guardReplace,
	"join":    guardJoin,
	"string":  guardString,
	"toJSON":  guardToJSON,
	"flatten": guardFlatten,
	"concat":  guardConcat,
}

const (
	chargeFn = "__ensemble_charge"
	stepFn   = "__ensemble_step"
	equalFn  = "__ensemble_equal"
	inFn     = "__ensemble_in"
	lastTrue = "__ensemble_last_true"
	guardFn  = "__ensemble_" // + builtin name
)

// guard weaves the meters into a program; marks are what markReads found
// (reads.go).
type guard struct{ marks *readMarks }

func (g guard) Visit(node *ast.Node) {
	switch n := (*node).(type) {
	case *ast.BinaryNode:
		switch {
		case n.Operator == "+" && maybeString(n.Type()):
			wrap(node, chargeFn)
		case (n.Operator == "==" || n.Operator == "!=") && maybeComposite(n.Left) && maybeComposite(n.Right):
			call := &ast.CallNode{Callee: &ast.IdentifierNode{Value: equalFn}, Arguments: []ast.Node{envNode(), n.Left, n.Right}}
			call.SetLocation(n.Location())
			var out ast.Node = call
			if n.Operator == "!=" {
				out = &ast.UnaryNode{Operator: "!", Node: call}
				out.SetLocation(n.Location())
			}
			ast.Patch(node, out)
		case n.Operator == "in" && maybeComposite(n.Left) && maybeList(n.Right.Type()):
			call := &ast.CallNode{Callee: &ast.IdentifierNode{Value: inFn}, Arguments: []ast.Node{envNode(), n.Left, n.Right}}
			call.SetLocation(n.Location())
			ast.Patch(node, call)
		}
	case *ast.MemberNode:
		// filter(…)[-1]: see findLast below.
		if isFilter(n.Node) && !n.Optional && isMinusOne(n.Property) {
			wrap(&n.Node, chargeFn)
		}
		g.member(node, n) // a read that may miss its key: reads.go
	case *ast.BuiltinNode:
		// expr compiles findLast and findLastIndex, and the last(filter(…))
		// and filter(…)[-1] its optimizer turns into findLast, with a loop
		// that leaves a value on the stack per item it visits (expr-lang/expr
		// issue 950, fixed after v1.17.8): any operand pushed before it is
		// then read wrong, the guard's own $env first. They are rewritten
		// into filter, last and map, which the optimizer does not fuse back
		// while the filter is wrapped.
		switch {
		case n.Name == "findLast" && len(n.Arguments) == 2:
			filter := &ast.BuiltinNode{Name: "filter", Arguments: n.Arguments}
			last := &ast.BuiltinNode{Name: "last", Arguments: []ast.Node{filter}}
			wrap(&last.Arguments[0], chargeFn)
			ast.Patch(node, last)
			return
		case n.Name == "findLastIndex" && len(n.Arguments) == 2:
			matches := &ast.BuiltinNode{Name: "map", Arguments: n.Arguments}
			ast.Patch(node, &ast.CallNode{Callee: &ast.IdentifierNode{Value: lastTrue}, Arguments: []ast.Node{envNode(), matches}})
			return
		case n.Name == "last" && len(n.Arguments) == 1 && isFilter(n.Arguments[0]):
			wrap(&n.Arguments[0], chargeFn)
			return
		}
		if _, ok := guarded[n.Name]; ok {
			args := append([]ast.Node{envNode()}, n.Arguments...)
			ast.Patch(node, &ast.CallNode{Callee: &ast.IdentifierNode{Value: guardFn + n.Name}, Arguments: args})
		} else if chargedAfter[n.Name] {
			wrap(node, chargeFn)
		}
	case *ast.PredicateNode:
		body := n.Node
		call := &ast.CallNode{Callee: &ast.IdentifierNode{Value: stepFn}, Arguments: []ast.Node{envNode(), body}}
		call.SetLocation(body.Location())
		n.Node = call
	}
}

// isFilter is whether n is a call of filter, or of map (the optimizer
// fuses map(filter(…)) into a filter), which the optimizer may fuse with
// what reads it.
func isFilter(n ast.Node) bool {
	b, ok := n.(*ast.BuiltinNode)
	return ok && (b.Name == "filter" || b.Name == "map")
}

// isMinusOne is whether n is the constant -1.
func isMinusOne(n ast.Node) bool {
	switch x := n.(type) {
	case *ast.IntegerNode:
		return x.Value == -1
	case *ast.UnaryNode:
		i, ok := x.Node.(*ast.IntegerNode)
		return ok && x.Operator == "-" && i.Value == 1
	}
	return false
}

// maybeComposite is whether n may be a list or a map when the condition
// runs: comparing it is comparing values in depth.
func maybeComposite(n ast.Node) bool {
	if _, ok := n.(*ast.NilNode); ok {
		return false
	}
	t := n.Type()
	if t == nil {
		return true
	}
	switch t.Kind() {
	case reflect.Interface, reflect.Map, reflect.Slice, reflect.Array, reflect.Struct, reflect.Pointer:
		return true
	}
	return false
}

// maybeList is whether a value of type t may be a list when the condition
// runs.
func maybeList(t reflect.Type) bool {
	return t == nil || t.Kind() == reflect.Interface || t.Kind() == reflect.Slice || t.Kind() == reflect.Array
}

func maybeString(t reflect.Type) bool {
	return t == nil || t.Kind() == reflect.String || t.Kind() == reflect.Interface
}

func envNode() ast.Node { return &ast.IdentifierNode{Value: "$env"} }

func wrap(node *ast.Node, fn string) {
	inner := *node
	ast.Patch(node, &ast.CallNode{Callee: &ast.IdentifierNode{Value: fn}, Arguments: []ast.Node{envNode(), inner}})
}

var (
	anyType    = reflect.TypeOf((*any)(nil)).Elem()
	stringType = reflect.TypeOf("")
	boolType   = reflect.TypeOf(true)
	sliceType  = reflect.TypeOf([]any{})
)

// sameAsSecond types a wrapper as its wrapped expression.
func sameAsSecond(args []reflect.Type) (reflect.Type, error) {
	if len(args) != 2 {
		return anyType, fmt.Errorf("internal: wrapper takes 2 arguments")
	}
	return args[1], nil
}

func guardFunctions(c *conf.Config) {
	memberFunction(c)
	c.Functions[chargeFn] = &builtin.Function{
		Name: chargeFn,
		Func: func(args ...any) (any, error) {
			if err := meterOf(args[0]).charge(shallowSize(args[1])); err != nil {
				return nil, err
			}
			return args[1], nil
		},
		Validate: sameAsSecond,
	}
	c.Functions[stepFn] = &builtin.Function{
		Name: stepFn,
		Func: func(args ...any) (any, error) {
			if err := meterOf(args[0]).step(1); err != nil {
				return nil, err
			}
			return args[1], nil
		},
		Validate: sameAsSecond,
	}
	boolOut := func([]reflect.Type) (reflect.Type, error) { return boolType, nil }
	c.Functions[equalFn] = &builtin.Function{
		Name: equalFn,
		Func: func(args ...any) (any, error) {
			return meterOf(args[0]).equal(args[1], args[2])
		},
		Validate: boolOut,
	}
	c.Functions[inFn] = &builtin.Function{
		Name: inFn,
		Func: func(args ...any) (any, error) {
			return meterOf(args[0]).in(args[1], args[2])
		},
		Validate: boolOut,
	}
	c.Functions[lastTrue] = &builtin.Function{
		Name: lastTrue,
		Func: func(args ...any) (any, error) {
			// The index of the last true of findLastIndex's matches, or -1.
			matches, _ := args[1].([]any)
			for i := len(matches) - 1; i >= 0; i-- {
				if b, _ := matches[i].(bool); b {
					return i, nil
				}
			}
			return -1, nil
		},
		Validate: func([]reflect.Type) (reflect.Type, error) { return reflect.TypeOf(0), nil },
	}
	for name, fn := range guarded {
		out := stringType
		if name == "flatten" || name == "concat" {
			out = sliceType
		}
		c.Functions[guardFn+name] = &builtin.Function{
			Name: guardFn + name,
			Func: func(args ...any) (any, error) { return fn(meterOf(args[0]), args[1:]) },
			// The arguments were checked by the first compile, against the builtin.
			Validate: func([]reflect.Type) (reflect.Type, error) { return out, nil },
		}
	}
}

// callBuiltin runs expr's own implementation of a builtin.
func callBuiltin(name string, args []any) (any, error) {
	f := builtin.Builtins[builtin.Index[name]]
	switch {
	case f.Fast != nil:
		return f.Fast(args[0]), nil
	case f.Func != nil:
		return f.Func(args...)
	case f.Safe != nil:
		out, _, err := f.Safe(args...)
		return out, err
	}
	return nil, fmt.Errorf("builtin %s is not available", name)
}

func toInt(v any) (int, error) {
	switch x := v.(type) {
	case int:
		return x, nil
	case float64:
		return int(x), nil
	case int64:
		return int(x), nil
	}
	rv := reflect.ValueOf(v)
	switch rv.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return int(rv.Int()), nil
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		u := rv.Uint()
		if u > uint64(MaxBytes)*2 {
			return MaxBytes * 2, nil
		}
		return int(u), nil
	case reflect.Float32, reflect.Float64:
		return int(rv.Float()), nil
	}
	return 0, fmt.Errorf("expected a number, got %s", typeName(v))
}

func guardRepeat(m *meter, args []any) (any, error) {
	s, ok := args[0].(string)
	if !ok || len(args) != 2 {
		return callBuiltin("repeat", args)
	}
	n, err := toInt(args[1])
	if err != nil {
		return nil, err
	}
	if n < 0 {
		return nil, fmt.Errorf("invalid argument for repeat (expected positive integer, got %d)", n)
	}
	if n > 0 && len(s) > MaxBytes/n {
		return nil, m.charge(-1)
	}
	if err := m.charge(len(s) * n); err != nil {
		return nil, err
	}
	return strings.Repeat(s, n), nil
}

func guardReplace(m *meter, args []any) (any, error) {
	if len(args) < 3 {
		return callBuiltin("replace", args)
	}
	s, ok1 := args[0].(string)
	old, ok2 := args[1].(string)
	repl, ok3 := args[2].(string)
	if !ok1 || !ok2 || !ok3 {
		return callBuiltin("replace", args)
	}
	n := strings.Count(s, old)
	if len(args) == 4 {
		limit, err := toInt(args[3])
		if err != nil {
			return nil, err
		}
		if limit >= 0 && limit < n {
			n = limit
		}
	}
	size := len(s)
	if grow := len(repl) - len(old); grow > 0 && n > 0 {
		if grow > MaxBytes/n {
			return nil, m.charge(-1)
		}
		size += grow * n
	}
	if err := m.charge(size); err != nil {
		return nil, err
	}
	return callBuiltin("replace", args)
}

func guardJoin(m *meter, args []any) (any, error) {
	sep := ""
	if len(args) == 2 {
		if s, ok := args[1].(string); ok {
			sep = s
		}
	}
	size := 0
	add := func(n int) bool {
		size += n + len(sep)
		return size <= MaxBytes
	}
	switch arr := args[0].(type) {
	case []string:
		for _, s := range arr {
			if !add(len(s)) {
				return nil, m.charge(-1)
			}
		}
	case []any:
		for _, v := range arr {
			s, _ := v.(string)
			if !add(len(s)) {
				return nil, m.charge(-1)
			}
		}
	}
	if err := m.charge(size); err != nil {
		return nil, err
	}
	return callBuiltin("join", args)
}

func guardString(m *meter, args []any) (any, error) {
	if len(args) != 1 {
		return callBuiltin("string", args)
	}
	if s, ok := args[0].(string); ok {
		return s, nil
	}
	if err := m.chargePrinted(args[0]); err != nil {
		return nil, err
	}
	return callBuiltin("string", args)
}

func guardToJSON(m *meter, args []any) (any, error) {
	if len(args) != 1 {
		return callBuiltin("toJSON", args)
	}
	if err := m.chargePrinted(args[0]); err != nil {
		return nil, err
	}
	b, err := json.MarshalIndent(args[0], "", "  ")
	if err != nil {
		return nil, err
	}
	return string(b), nil
}

func guardFlatten(m *meter, args []any) (any, error) {
	if len(args) == 1 {
		size, _ := deepSize(args[0], m.bytes)
		if err := m.charge(size); err != nil {
			return nil, err
		}
	}
	return callBuiltin("flatten", args)
}

func guardConcat(m *meter, args []any) (any, error) {
	size := 0
	for _, a := range args {
		size += shallowSize(a)
		if size > MaxBytes {
			return nil, m.charge(-1)
		}
	}
	if err := m.charge(size); err != nil {
		return nil, err
	}
	return callBuiltin("concat", args)
}

// Sizes are estimates in bytes: a string its length, a collection 16 bytes
// per element (plus its elements for deepSize).
const elemSize = 16

func shallowSize(v any) int {
	switch x := v.(type) {
	case nil, bool, int, float64:
		return 0
	case string:
		return len(x)
	case []any:
		return elemSize * len(x)
	case map[string]any:
		return 2 * elemSize * len(x)
	case []string:
		return elemSize * len(x)
	}
	rv := reflect.ValueOf(v)
	switch rv.Kind() {
	case reflect.Slice, reflect.Array:
		return elemSize * rv.Len()
	case reflect.Map:
		return 2 * elemSize * rv.Len()
	case reflect.String:
		return rv.Len()
	}
	return 0
}

// chargePrinted charges the bytes and the work of printing v, before it is
// printed.
func (m *meter) chargePrinted(v any) error {
	size, work := deepSize(v, m.bytes)
	if err := m.step(work); err != nil {
		return err
	}
	return m.charge(size)
}

// deepSize estimates the size of v printed (JSON or %v), counting shared
// values each time they are reached, and the work of printing it (one unit
// per value, mapEntryWork per map entry). It stops once the size exceeds
// limit and then returns a size above limit.
func deepSize(v any, limit int) (size, work int) {
	var walk func(v any, depth int) bool
	walk = func(v any, depth int) bool {
		work++
		size += 2*depth + 8 // indentation, separators, small scalars
		switch x := v.(type) {
		case nil, bool, int, float64:
		case string:
			size += len(x) + utf8.RuneCountInString(x)/8 // some escaping slack
		case []any:
			for _, e := range x {
				if size > limit || !walk(e, depth+1) {
					return false
				}
			}
		case map[string]any:
			for k, e := range x {
				size += len(k)
				work += mapEntryWork
				if size > limit || !walk(e, depth+1) {
					return false
				}
			}
		default:
			rv := reflect.ValueOf(v)
			switch rv.Kind() {
			case reflect.String:
				size += rv.Len()
			case reflect.Slice, reflect.Array:
				for i := 0; i < rv.Len(); i++ {
					if size > limit || !walk(rv.Index(i).Interface(), depth+1) {
						return false
					}
				}
			case reflect.Map:
				iter := rv.MapRange()
				for iter.Next() {
					size += 8
					work += mapEntryWork
					if size > limit || !walk(iter.Value().Interface(), depth+1) {
						return false
					}
				}
			case reflect.Pointer, reflect.Interface:
				if !rv.IsNil() {
					return walk(rv.Elem().Interface(), depth)
				}
			}
		}
		return size <= limit
	}
	if !walk(v, 0) || size > limit {
		return limit + 1, work
	}
	return size, work
}
