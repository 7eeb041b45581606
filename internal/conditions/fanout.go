package conditions

import (
	"context"
	"reflect"

	"github.com/expr-lang/expr"
	"github.com/expr-lang/expr/ast"
)

// List is a fan-out's over: an expression over the conditions' names whose
// value must be a list, one execution per item
// (docs/semantics.md#fan-out). It is immutable and safe for concurrent use.
type List struct {
	Program
}

// listWhat names the expression in messages.
const listWhat = "fan_out.over"

// CompileList checks a fan-out's over once, as Compile does a condition. An
// expression whose value is known not to be a list (a constant string, a
// number, a comparison, len(...)) is a *CompileError: only a list, or a
// value known only when the run is there (context.x), can be fanned out.
func CompileList(src string) (*List, error) {
	p, err := compile(src, listWhat, Env{}, evalEnv{})
	if err != nil {
		return nil, err
	}
	// The program compiled: compile the source once more, unguarded, to
	// read the type the checker found for it.
	tree, err := expr.Compile(src, commonOptions(Env{})...)
	if err != nil {
		return nil, &CompileError{Msg: oneLine(err.Error()), What: listWhat}
	}
	if what := notList(tree.Node()); what != "" {
		return nil, &CompileError{Msg: "must yield a list, but it is always " + what, What: listWhat}
	}
	return &List{*p}, nil
}

// notList describes the value of n when it is known not to be a list, and
// is "" when it is a list or may be one.
func notList(n ast.Node) string {
	if _, ok := n.(*ast.NilNode); ok {
		return "nil"
	}
	t := n.Type()
	if t == nil {
		return ""
	}
	switch t.Kind() {
	case reflect.Slice, reflect.Array, reflect.Interface:
		return ""
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "a boolean"
	case reflect.Map, reflect.Struct:
		return "a map"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64,
		reflect.Float32, reflect.Float64:
		return "a number"
	}
	return ""
}

// EvalContext runs the expression in the sandbox. Its value must be a list
// ([]any): another value is a *RuntimeError naming its type. A run-time
// error is a *RuntimeError.
func (l *List) EvalContext(ctx context.Context, env *Env) ([]any, error) {
	sel := Select{l.Program}
	v, err := sel.EvalContext(ctx, env, nil)
	if re, ok := err.(*RuntimeError); ok {
		re.What = listWhat
	}
	if err != nil {
		return nil, err
	}
	switch x := v.(type) {
	case []any:
		return x, nil
	case nil:
		return nil, &RuntimeError{Msg: "must yield a list, but it returned null", What: listWhat}
	}
	rv := reflect.ValueOf(v)
	if rv.Kind() == reflect.Slice || rv.Kind() == reflect.Array {
		// A typed list (from a builtin such as split or keys): as values.
		out := make([]any, rv.Len())
		for i := range out {
			out[i] = rv.Index(i).Interface()
		}
		return out, nil
	}
	return nil, &RuntimeError{Msg: "must yield a list, but it returned " + typeWords(typeName(v)), What: listWhat}
}
