package conditions

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"github.com/expr-lang/expr"
	"github.com/expr-lang/expr/ast"
)

// Compiling: the checks, the guarded program, and the names a condition reads.

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
