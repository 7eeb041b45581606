package conditions

import (
	"fmt"
	"reflect"
	"regexp"
	"regexp/syntax"

	"github.com/expr-lang/expr/ast"
	"github.com/expr-lang/expr/builtin"
	"github.com/expr-lang/expr/conf"
)

// matchesFn replaces `a matches b` when b is not a literal: the pattern
// then comes from the run's data (an output), and a regular expression's
// match, linear in the text as it is, is also linear in the pattern's
// size: a pattern of ten thousand alternations over an output of a
// megabyte is minutes of work in one step, which neither the budgets nor
// the run's deadline would stop. A literal pattern is the author's, and
// compiled with the condition.
const matchesFn = "__ensemble_matches"

// matchWorkPerUnit is how many steps of a match (a byte of the text
// against an instruction of the pattern) make a unit of work.
const matchWorkPerUnit = 100

// guardMatches rewrites node, `a matches b` with b not a literal.
func guardMatches(node *ast.Node, n *ast.BinaryNode) {
	if _, literal := n.Right.(*ast.StringNode); literal {
		return
	}
	call := &ast.CallNode{Callee: &ast.IdentifierNode{Value: matchesFn}, Arguments: []ast.Node{envNode(), n.Left, n.Right}}
	call.SetLocation(n.Location())
	ast.Patch(node, call)
}

func matchesFunction(c *conf.Config) {
	c.Functions[matchesFn] = &builtin.Function{
		Name: matchesFn,
		Func: func(args ...any) (any, error) {
			return meterOf(args[0]).matches(args[1], args[2])
		},
		Validate: func([]reflect.Type) (reflect.Type, error) { return boolType, nil },
	}
}

// matches is `text matches pattern`, its work charged before it is done:
// the pattern's size to the memory budget, the text's bytes times the
// pattern's instructions to the steps.
func (m *meter) matches(text, pattern any) (bool, error) {
	s, ok1 := text.(string)
	p, ok2 := pattern.(string)
	if !ok1 || !ok2 {
		return false, fmt.Errorf(`invalid operation: %s matches %s (mismatched types)`, typeName(text), typeName(pattern))
	}
	if err := m.charge(len(p)); err != nil {
		return false, err
	}
	parsed, err := syntax.Parse(p, syntax.Perl)
	if err != nil {
		return false, fmt.Errorf("error parsing regexp: %w", err)
	}
	prog, err := syntax.Compile(parsed.Simplify())
	if err != nil {
		return false, fmt.Errorf("error parsing regexp: %w", err)
	}
	work := int64(len(s)+1) * int64(len(prog.Inst)) / matchWorkPerUnit
	if err := m.step(int(min(work, int64(m.steps)+1)) + 1); err != nil {
		return false, err
	}
	re, err := regexp.Compile(p)
	if err != nil {
		return false, err
	}
	return re.MatchString(s), nil
}
