package conditions

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strings"

	"github.com/expr-lang/expr/ast"
	"github.com/expr-lang/expr/builtin"
	"github.com/expr-lang/expr/conf"
)

// The guard: the meters of budget.go woven into the program at compile time.

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
		case n.Operator == "matches":
			guardMatches(node, n)
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
	matchesFunction(c)
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
