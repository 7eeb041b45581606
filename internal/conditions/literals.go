package conditions

import (
	"cmp"
	"slices"
	"strings"

	"github.com/expr-lang/expr/ast"
	"github.com/expr-lang/expr/parser"
)

// Comparison is a test of a value the expression reads from context or
// output against literals: `context.judge.verdict == 'APPROVE'`,
// `'APPROVE' != output.verdict`, `context.a.level in [1, 2]`, or
// `all(context.reviews, .verdict == 'OK')` for each item of a list. The
// loader checks the literals against the output_schema of the agent whose
// output is read: a literal the value can never equal is a mistake.
type Comparison struct {
	// Root is "context" or "output"; Path the steps below it
	// (context.judge.verdict is judge, verdict; context.r[0].v is r, an
	// index, v; an item of a predicate over context.r is an index of r).
	Root string
	Path []Step
	// Op is "==", "!=", "in" or "not in" (an inverted test, ! of it,
	// counts as written).
	Op string
	// Elem: the literals are looked for among the items of the value read
	// (`'x' in context.a.tags`), not compared with it.
	Elem bool
	// Literals are the scalar literals compared: one for == and !=, those
	// of the list for in (other items of the list are left out).
	Literals []Literal
	// Defaults are the scalar literals the read falls back to
	// (`(context.a.b ?? 'none') == 'none'`): the value may equal them.
	Defaults []any
	// Line and Column are those of the last step of the path.
	Line, Column int
}

// Step is a step of a Comparison's path: a key, or an index into a list
// (any index: the item's schema is the same).
type Step struct {
	Key   string
	Index bool
}

// Literal is a scalar literal of an expression: Value is a string, an int,
// a float64, a bool or nil; Text is the literal as written ('APPROVE', -3),
// at its 1-based Line and Column in the source.
type Literal struct {
	Value        any
	Text         string
	Line, Column int
}

// PathString writes a comparison's path as the expression reads it:
// context.judge.verdict, context.r[].v for an item.
func (c Comparison) PathString() string {
	s := c.Root
	for _, st := range c.Path {
		if st.Index {
			s += "[]"
		} else {
			s += "." + st.Key
		}
	}
	return s
}

// comparisons finds the comparisons of src with literals, in source order.
// src compiled already; one that does not parse has none.
func comparisons(src string) []Comparison {
	tree, err := parser.Parse(src)
	if err != nil {
		return nil
	}
	if !strings.Contains(src, "=") && !strings.Contains(src, "in") {
		return nil // no ==, != or in: nothing to parse again
	}
	f := &literalFinder{text: src, src: []rune(src), items: map[*ast.PointerNode]ast.Node{}, negated: map[ast.Node]bool{}}
	ast.Walk(&tree.Node, f)
	// Children are visited before their parent: a predicate's items are
	// known once the whole tree is walked, then each comparison is read.
	var out []Comparison
	for _, b := range f.binaries {
		out = append(out, f.comparison(b)...)
	}
	slices.SortStableFunc(out, func(a, b Comparison) int { return cmp.Or(a.Line-b.Line, a.Column-b.Column) })
	return out
}

// literalFinder collects the binary operators of an expression and what
// each pointer (#, .field) of a predicate ranges over.
type literalFinder struct {
	text     string
	src      []rune
	binaries []*ast.BinaryNode
	// items: the list a pointer of a predicate is an item of (the
	// builtin's first argument), for the pointers of predicates.
	items map[*ast.PointerNode]ast.Node
	// negated: the in-tests (and others) under not or !.
	negated map[ast.Node]bool
}

// predicateBuiltins are the builtins whose predicate ranges over the items
// of their first argument (# is an item).
var predicateBuiltins = map[string]bool{
	"all": true, "none": true, "any": true, "one": true, "filter": true, "map": true,
	"count": true, "sum": true, "find": true, "findIndex": true, "findLast": true,
	"findLastIndex": true, "groupBy": true, "sortBy": true, "reduce": true,
}

func (f *literalFinder) Visit(node *ast.Node) {
	switch n := (*node).(type) {
	case *ast.BinaryNode:
		switch n.Operator {
		case "==", "!=", "in":
			f.binaries = append(f.binaries, n)
		}
	case *ast.UnaryNode:
		// The outermost of !!x is visited last: its parity stands.
		if isNot(n) {
			inner, neg := n.Node, true
			for u, ok := inner.(*ast.UnaryNode); ok && isNot(u); u, ok = inner.(*ast.UnaryNode) {
				inner, neg = u.Node, !neg
			}
			f.negated[inner] = neg
		}
	case *ast.BuiltinNode:
		if !predicateBuiltins[n.Name] || len(n.Arguments) < 2 {
			return
		}
		p, ok := n.Arguments[1].(*ast.PredicateNode)
		if !ok {
			return
		}
		// Inner predicates were visited first and claimed their pointers.
		ast.Walk(&p.Node, pointerClaim{f.items, n.Arguments[0]})
	}
}

func isNot(u *ast.UnaryNode) bool { return u.Operator == "not" || u.Operator == "!" }

// pointerClaim gives the unclaimed item pointers (# and .field) of a
// predicate's body to the list the predicate ranges over.
type pointerClaim struct {
	items map[*ast.PointerNode]ast.Node
	list  ast.Node
}

func (c pointerClaim) Visit(node *ast.Node) {
	if p, ok := (*node).(*ast.PointerNode); ok && p.Name == "" {
		if _, claimed := c.items[p]; !claimed {
			c.items[p] = c.list
		}
	}
}

// comparison reads b as a comparison of a path with literals; none when
// it is not one.
func (f *literalFinder) comparison(b *ast.BinaryNode) []Comparison {
	op := b.Operator
	if f.negated[b] {
		switch op {
		case "in":
			op = "not in"
		case "==":
			op = "!="
		case "!=":
			op = "=="
		}
	}
	switch b.Operator {
	case "==", "!=":
		for _, sides := range [][2]ast.Node{{b.Left, b.Right}, {b.Right, b.Left}} {
			lit, ok := f.literal(sides[1])
			if !ok {
				continue
			}
			c, ok := f.read(sides[0])
			if !ok {
				return nil
			}
			c.Op, c.Literals = op, []Literal{lit}
			return []Comparison{c}
		}
	case "in":
		if arr, ok := b.Right.(*ast.ArrayNode); ok {
			c, ok := f.read(b.Left)
			if !ok {
				return nil
			}
			for _, n := range arr.Nodes {
				if lit, ok := f.literal(n); ok {
					c.Literals = append(c.Literals, lit)
				}
			}
			if len(c.Literals) == 0 {
				return nil
			}
			c.Op = op
			return []Comparison{c}
		}
		lit, ok := f.literal(b.Left)
		if !ok {
			return nil
		}
		c, ok := f.read(b.Right)
		if !ok {
			return nil
		}
		c.Op, c.Elem, c.Literals = op, true, []Literal{lit}
		return []Comparison{c}
	}
	return nil
}

// read is the comparison reading n: a path of constant keys and indexes
// from context or output, or from an item of a predicate over one, and
// its fallbacks (n ?? literal); ok is false for anything else.
func (f *literalFinder) read(n ast.Node) (c Comparison, ok bool) {
	if bin, isBin := n.(*ast.BinaryNode); isBin && bin.Operator == "??" {
		lit, isLit := f.literal(bin.Right)
		if !isLit {
			return c, false
		}
		c, ok = f.read(bin.Left)
		c.Defaults = append(c.Defaults, lit.Value)
		return c, ok
	}
	root, path, ok := f.path(n, 0)
	if !ok || len(path) == 0 {
		return c, false
	}
	c.Root, c.Path = root, path
	c.Line, c.Column = position(f.text, n.Location().From)
	return c, true
}

// path is the root and steps of the member chain n; depth bounds the
// pointers followed to the lists they are items of.
func (f *literalFinder) path(n ast.Node, depth int) (root string, steps []Step, ok bool) {
	var rev []Step
	for {
		switch x := n.(type) {
		case *ast.ChainNode:
			n = x.Node
			continue
		case *ast.MemberNode:
			switch p := x.Property.(type) {
			case *ast.StringNode:
				rev = append(rev, Step{Key: p.Value})
			case *ast.IntegerNode:
				rev = append(rev, Step{Index: true})
			case *ast.UnaryNode:
				if _, isInt := p.Node.(*ast.IntegerNode); !isInt || p.Operator != "-" {
					return "", nil, false
				}
				rev = append(rev, Step{Index: true})
			default:
				return "", nil, false
			}
			n = x.Node
			continue
		case *ast.IdentifierNode:
			if x.Value != "context" && x.Value != "output" {
				return "", nil, false
			}
			slices.Reverse(rev)
			return x.Value, rev, true
		case *ast.PointerNode:
			list, found := f.items[x]
			if x.Name != "" || !found || depth > 16 {
				return "", nil, false
			}
			root, steps, ok = f.path(list, depth+1)
			if !ok {
				return "", nil, false
			}
			slices.Reverse(rev)
			return root, append(append(slices.Clip(steps), Step{Index: true}), rev...), true
		}
		return "", nil, false
	}
}

// literal is n as a scalar literal: a string, a number (negative ones
// too), a boolean or nil.
func (f *literalFinder) literal(n ast.Node) (Literal, bool) {
	loc := n.Location()
	var v any
	switch x := n.(type) {
	case *ast.StringNode:
		v = x.Value
	case *ast.IntegerNode:
		v = x.Value
	case *ast.FloatNode:
		v = x.Value
	case *ast.BoolNode:
		v = x.Value
	case *ast.NilNode:
		v = nil
	case *ast.UnaryNode:
		if x.Operator != "-" && x.Operator != "+" {
			return Literal{}, false
		}
		inner, ok := f.literal(x.Node)
		if !ok {
			return Literal{}, false
		}
		switch num := inner.Value.(type) {
		case int:
			v = num
			if x.Operator == "-" {
				v = -num
			}
		case float64:
			v = num
			if x.Operator == "-" {
				v = -num
			}
		default:
			return Literal{}, false
		}
		loc.To = x.Node.Location().To
	default:
		return Literal{}, false
	}
	lit := Literal{Value: v}
	if loc.From >= 0 && loc.From <= loc.To && loc.To <= len(f.src) {
		lit.Text = string(f.src[loc.From:loc.To])
	}
	lit.Line, lit.Column = position(f.text, loc.From)
	return lit, true
}
