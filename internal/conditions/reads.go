package conditions

import (
	"reflect"
	"strings"
	"unicode/utf8"

	"github.com/expr-lang/expr/ast"
	"github.com/expr-lang/expr/builtin"
	"github.com/expr-lang/expr/conf"
	"github.com/expr-lang/expr/vm/runtime"
)

// Reads of missing keys (docs/semantics.md#reads-of-missing-keys).
//
// A member access with a constant name (x.name, x["name"]) over a map that
// has no such key gives null, as expr does; the guard also notes it as a
// Miss in the evaluation's Reads (Env.Reads), so that the run can say so.
// Not noted:
//   - a read through ?. (x?.name), or just before one (x.name?.y): the
//     file says the key may be absent;
//   - a read on the left of ?? (x.a.b ?? d: both .a and .b), along the
//     chain of members that is the left operand: the same;
//   - the top-level keys of context and executions (context.agent): an
//     agent that has not run yet has no key there, which is no mistake;
//   - a name that is not a constant (x[k]), and an index of a list.

// Miss is one read of a key that the map read does not have.
type Miss struct {
	// Expression is the source of the expression (a template's
	// placeholder) that read it, as written.
	Expression string
	// Path is the read as written: context.get_diff.touches_cod.
	Path string
	// Key is the missing key: touches_cod.
	Key string
	// Suggestion is the key the map has that is closest to Key (a
	// spelling away), "" when none is: set by Suggest.
	Suggestion string
	// obj is the map read, until Suggest searched it.
	obj map[string]any
}

// Suggest sets and returns Suggestion. The search costs the keys of the
// map read, so it is done once, and only for a miss that is reported.
func (m *Miss) Suggest() string {
	if m.obj != nil {
		m.Suggestion, m.obj = closest(m.Key, m.obj), nil
	}
	return m.Suggestion
}

// Reads collects the misses of evaluations: set Env.Reads to one, and read
// Misses (or Take them) after the evaluation. Each path is noted once per
// evaluation. A Reads is not safe for concurrent use.
type Reads struct {
	Misses []Miss
}

// Take returns the misses noted so far and forgets them.
func (r *Reads) Take() []Miss {
	if r == nil || len(r.Misses) == 0 {
		return nil
	}
	out := r.Misses
	r.Misses = nil
	return out
}

// maxPath bounds a path as it is reported.
const maxPath = 200

// memberFn is the guard's member access that notes misses.
const memberFn = "__ensemble_member"

// readMarks is what the first of the guard's passes finds, for the second:
// the member accesses not to note (left of ??), and the path of each as
// written (before the guard rewrites what is below it).
type readMarks struct {
	silent map[*ast.MemberNode]bool
	paths  map[*ast.MemberNode]string
}

// markReads is the first pass: it runs before the guard.
type markReads struct{ marks *readMarks }

func (v markReads) Visit(node *ast.Node) {
	switch n := (*node).(type) {
	case *ast.MemberNode:
		if _, ok := n.Property.(*ast.StringNode); ok && !n.Optional {
			if v.marks.paths == nil {
				v.marks.paths = map[*ast.MemberNode]string{}
			}
			v.marks.paths[n] = cut(n.String(), maxPath)
		}
		if base, ok := n.Node.(*ast.MemberNode); ok && n.Optional {
			// x.b?.c: the ?. says x.b may be null, absent included.
			v.mark(base)
		}
	case *ast.BinaryNode:
		if n.Operator == "??" {
			v.silence(n.Left)
		}
	}
}

// silence marks the member accesses along the chain that is n.
func (v markReads) silence(n ast.Node) {
	for n != nil {
		switch x := n.(type) {
		case *ast.ChainNode:
			n = x.Node
		case *ast.MemberNode:
			v.mark(x)
			n = x.Node
		case *ast.BinaryNode:
			if x.Operator != "??" {
				return
			}
			v.silence(x.Right)
			n = x.Left
		default:
			return
		}
	}
}

func (v markReads) mark(n *ast.MemberNode) {
	if v.marks.silent == nil {
		v.marks.silent = map[*ast.MemberNode]bool{}
	}
	v.marks.silent[n] = true
}

// member rewrites a member access that may read a missing key into a call
// of memberFn: the object first (so that the jump of a ?. below it leaves
// the stack as the chain expects), the key, the path, and $env last.
func (g guard) member(node *ast.Node, n *ast.MemberNode) bool {
	if g.marks == nil || n.Optional || n.Method || g.marks.silent[n] {
		return false
	}
	key, ok := n.Property.(*ast.StringNode)
	path, known := g.marks.paths[n]
	if !ok || !known {
		return false
	}
	if id, ok := n.Node.(*ast.IdentifierNode); ok && (id.Value == "context" || id.Value == "executions") {
		return false // a top-level key: an agent that has not run yet
	}
	if t := n.Type(); t != nil && t.Kind() != reflect.Interface {
		return false // a typed field: never a key of an output
	}
	call := &ast.CallNode{Callee: &ast.IdentifierNode{Value: memberFn},
		Arguments: []ast.Node{n.Node, &ast.StringNode{Value: key.Value}, &ast.StringNode{Value: path}, envNode()}}
	call.SetLocation(n.Location())
	ast.Patch(node, call)
	return true
}

func memberFunction(c *conf.Config) {
	c.Functions[memberFn] = &builtin.Function{
		Name: memberFn,
		Func: func(args ...any) (any, error) {
			key, _ := args[1].(string)
			if m, ok := args[0].(map[string]any); ok {
				v, found := m[key]
				if !found {
					path, _ := args[2].(string)
					meterOf(args[3]).miss(path, key, m)
				}
				return v, nil
			}
			// Anything else as expr fetches it (a panic is the error of
			// the evaluation, as expr's own fetch's is).
			return runtime.Fetch(args[0], key), nil
		},
		Validate: func([]reflect.Type) (reflect.Type, error) { return anyType, nil },
	}
}

// miss notes a read of key, missing from m, at path.
func (m *meter) miss(path, key string, obj map[string]any) {
	r := m.reads
	if r == nil {
		return
	}
	for _, x := range r.Misses {
		if x.Path == path && x.Expression == m.source {
			return
		}
	}
	r.Misses = append(r.Misses, Miss{Expression: m.source, Path: path, Key: key, obj: obj})
}

// Bounds of the search for a suggestion: the keys it looks at, and their
// length.
const (
	maxSuggestKeys = 10_000
	maxSuggestLen  = 64
)

// closest is the key of obj nearest to key in edit distance (optimal
// string alignment: a swap of two neighbours is one edit), when it is near
// enough to be a misspelling: at most a third of its letters, at least one,
// for a key of two letters or more, or the same letters in another case;
// "" otherwise. A one-letter key suggests nothing: any other one-letter
// key is one edit away. Ties go to the first in sorted order.
func closest(key string, obj map[string]any) string {
	if len(key) > maxSuggestLen {
		return ""
	}
	best, bestD := "", -1
	n := utf8.RuneCountInString(key)
	limit := max(1, n/3)
	seen := 0
	for k := range obj {
		if seen++; seen > maxSuggestKeys {
			break
		}
		// The distance is at least the difference of the lengths.
		if len(k) > maxSuggestLen || abs(utf8.RuneCountInString(k)-n) > limit {
			continue
		}
		d := distance(key, k, limit)
		switch {
		case strings.EqualFold(k, key):
			d = 0
		case n < 2:
			continue
		}
		if d > limit {
			continue
		}
		if bestD < 0 || d < bestD || d == bestD && k < best {
			best, bestD = k, d
		}
	}
	return best
}

// distance is the optimal string alignment distance of a and b, in runes
// (insertions, deletions, substitutions and swaps of two neighbours, each
// one edit), or a number above bound once it is known to exceed it.
func distance(a, b string, bound int) int {
	ra, rb := []rune(a), []rune(b)
	prev2 := make([]int, len(rb)+1) // row i-2
	prev := make([]int, len(rb)+1)  // row i-1
	cur := make([]int, len(rb)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(ra); i++ {
		cur[0] = i
		least := cur[0]
		for j := 1; j <= len(rb); j++ {
			sub := prev[j-1]
			if ra[i-1] != rb[j-1] {
				sub++
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, sub)
			if i > 1 && j > 1 && ra[i-1] == rb[j-2] && ra[i-2] == rb[j-1] {
				cur[j] = min(cur[j], prev2[j-2]+1)
			}
			least = min(least, cur[j])
		}
		// A swap reaches back two rows: every later row is over the bound
		// once this one is and the one before is at least at it.
		if least > bound && minOf(prev) >= bound {
			return bound + 1
		}
		prev2, prev, cur = prev, cur, prev2
	}
	return prev[len(rb)]
}

func minOf(row []int) int {
	m := row[0]
	for _, v := range row[1:] {
		m = min(m, v)
	}
	return m
}

// cut shortens s to at most n bytes, at a rune boundary, marking the cut.
func cut(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}

func abs(n int) int {
	if n < 0 {
		return -n
	}
	return n
}
