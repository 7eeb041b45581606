package ensemble

import (
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/ensemble-run/ensemble/internal/conditions"
)

// comparedLiterals checks, once every agent is decoded, the literals that
// conditions, guards, selects, fan_out.over and templates compare with a
// field of an agent's output against that agent's output_schema
// (docs/format.md#output-schemas): context.judge.verdict == 'APPROVED'
// where the schema says enum: [APPROVE, REJECT] would be false at every
// turn, silently, so it is a load error with a "did you mean". A literal
// is refused only when the schema says for sure that the value can never
// equal it (its enum, const or type, through properties and items); a
// comparison with null never is (a field may be absent).
func (d *decoder) comparedLiterals(agents []*Agent) {
	byKey := schemaAgents(agents)
	if len(byKey) == 0 {
		return
	}
	byName := map[string]*Agent{}
	for _, a := range byKey {
		byName[a.Name] = a
	}
	selectDeps := map[*conditions.Program]*Dependency{}
	for _, s := range d.selects {
		if sel := s.dep.SelectProgram.get(); sel != nil {
			selectDeps[&sel.Program] = s.dep
		}
	}
	for _, c := range d.conds {
		if len(c.p.Comparisons) == 0 {
			continue
		}
		scope := literalScope{byKey: byKey}
		// A select's output is the output of the agent it depends on; an
		// edge on: failure or always may deliver an error instead.
		if dep := selectDeps[c.p]; dep != nil && !dep.OnFailure && !dep.OnAlways {
			scope.output = byName[dep.AgentName]
		}
		for _, pr := range scope.problems(c.p.Comparisons) {
			d.badName(c, pr.line, pr.col, "%s (%s)", pr.text, exprAt(pr.line, pr.col, c.what))
		}
	}
}

// CheckLiterals checks the literals that the expression at key (a loop's
// until, say) compares with the outputs of child's agents, as the file's
// own conditions are checked: its context is child's final state, and its
// output the output of child's agent named output, or with output "" the
// whole final state.
func (f *Fields) CheckLiterals(key string, c CompiledCondition, child *Ensemble, output string) {
	p := c.get()
	if p == nil || len(p.Comparisons) == 0 || child == nil {
		return
	}
	scope := literalScope{byKey: schemaAgents(child.Agents)}
	if output == "" {
		scope.outputIsState = true
	} else if a := child.Agent(output); a != nil {
		scope.output = scope.byKey[a.StateKey()]
	}
	for _, pr := range scope.problems(p.Comparisons) {
		f.Bad(key, "%s (%s)", pr.text, exprAt(pr.line, pr.col, key))
	}
}

// schemaAgents are the agents with an output_schema, by state key.
func schemaAgents(agents []*Agent) map[string]*Agent {
	byKey := map[string]*Agent{}
	for _, a := range agents {
		if a.OutputSchema != nil && a.OutputSchema.Doc != nil {
			byKey[a.StateKey()] = a
		}
	}
	return byKey
}

// literalScope is whose outputs an expression reads: context's agents by
// state key, and the agent whose output is output (nil: none known), or
// with outputIsState, output is a state as context is.
type literalScope struct {
	byKey         map[string]*Agent
	output        *Agent
	outputIsState bool
}

// problems are the literals of cmps that the values they are compared
// with can never equal.
func (s literalScope) problems(cmps []conditions.Comparison) []literalProblem {
	var out []literalProblem
	for _, cmp := range cmps {
		var a *Agent
		steps := cmp.Path
		switch {
		case cmp.Root == "context" || (cmp.Root == "output" && s.outputIsState):
			if steps[0].Index {
				continue
			}
			a, steps = s.byKey[steps[0].Key], steps[1:]
		case cmp.Root == "output":
			a = s.output
		}
		if a != nil {
			out = append(out, literalProblems(a, steps, cmp)...)
		}
	}
	return out
}

// literalProblem is a literal a comparison refuses, at its place in the
// expression.
type literalProblem struct {
	line, col int
	text      string
}

// literalProblems are the literals of cmp that the value at steps of a's
// output can never equal. A fan-out agent's output is the list of its
// instances' outputs, each of which the schema describes.
func literalProblems(a *Agent, steps []conditions.Step, cmp conditions.Comparison) []literalProblem {
	if a.FanOut != nil {
		if len(steps) == 0 || !steps[0].Index {
			return nil
		}
		steps = steps[1:]
	}
	node, ok := schemaAt(a.OutputSchema.Doc, steps)
	if ok && cmp.Elem {
		node, ok = itemsOf(node)
	}
	if !ok {
		return nil
	}
	dom, ok := domainOf(node, 0)
	if !ok {
		return nil
	}
	var out []literalProblem
	for _, lit := range cmp.Literals {
		if lit.Value == nil || slices.ContainsFunc(cmp.Defaults, func(v any) bool { return jsonEqual(v, lit.Value) }) {
			continue
		}
		why := dom.refuses(lit, a, cmp.PathString())
		if why == "" {
			continue
		}
		read := "compares " + cmp.PathString() + " with " + lit.Text
		if cmp.Elem {
			read = "looks for " + lit.Text + " among the items of " + cmp.PathString()
		}
		hint := ""
		if i := strings.Index(why, "; did you mean"); i >= 0 {
			why, hint = why[:i], why[i:]
		}
		out = append(out, literalProblem{lit.Line, lit.Column, read + ", but " + why + ", " + consequence(cmp) + hint})
	}
	return out
}

// consequence says what a refused literal does to its comparison.
func consequence(cmp conditions.Comparison) string {
	switch {
	case cmp.Op == "==":
		return "so the == is always false"
	case cmp.Op == "!=":
		return "so the != is always true and tests nothing"
	case cmp.Elem && cmp.Op == "in":
		return "so the in is always false"
	case cmp.Elem:
		return "so the not in is always true"
	}
	return "so that item of the list never matches"
}

// schemaAt is the subschema of doc that describes the value at steps:
// through properties for a key, items for an index. ok is false when the
// schema cannot tell: no properties (or items) there, or a reference,
// whose siblings older drafts ignore.
func schemaAt(doc map[string]any, steps []conditions.Step) (map[string]any, bool) {
	node := doc
	for _, st := range steps {
		if hasRef(node) {
			return nil, false
		}
		var next any
		if st.Index {
			if _, ok := node["prefixItems"]; ok {
				return nil, false
			}
			next = node["items"]
		} else {
			props, _ := node["properties"].(map[string]any)
			next = props[st.Key]
		}
		m, ok := next.(map[string]any)
		if !ok {
			return nil, false
		}
		node = m
	}
	return node, !hasRef(node)
}

// itemsOf is the schema of a list's items, when node says the value is a
// list and never an object: in looks for a key in an object.
func itemsOf(node map[string]any) (map[string]any, bool) {
	dom, ok := domainOf(node, 0)
	if !ok || dom.types == nil || typeAllows(dom.types, "object") {
		return nil, false
	}
	return schemaAt(node, []conditions.Step{{Index: true}})
}

func hasRef(node map[string]any) bool {
	for _, k := range []string{"$ref", "$dynamicRef", "$recursiveRef"} {
		if _, ok := node[k]; ok {
			return true
		}
	}
	return false
}

// domain is what a schema allows a value to be, as far as the check goes:
// one of values (nil: any value) and of types (nil: any type). It may
// allow more than the schema does, never less.
type domain struct {
	values []any
	types  []string
}

// maxCompositionDepth bounds the nesting of allOf, anyOf and oneOf that
// domainOf follows.
const maxCompositionDepth = 8

// domainOf is what node allows: its const, enum and type (with nullable:
// true, null too), narrowed by its allOf and by the union of its anyOf's
// and oneOf's branches. ok is false when node restricts neither values
// nor types, or allows nothing (the schema is then wrong in another way).
func domainOf(node map[string]any, depth int) (dom domain, ok bool) {
	if hasRef(node) || depth > maxCompositionDepth {
		return domain{}, false
	}
	if c, ok := node["const"]; ok {
		dom.values = []any{c}
	}
	if e, ok := node["enum"].([]any); ok {
		dom = dom.narrow(domain{values: e})
	}
	var types []string
	switch t := node["type"].(type) {
	case string:
		types = []string{t}
	case []any:
		for _, x := range t {
			if s, ok := x.(string); ok {
				types = append(types, s)
			}
		}
		if len(types) != len(t) {
			types = nil
		}
	}
	if types != nil {
		if node["nullable"] == true {
			types = append(types, "null")
		}
		dom = dom.narrow(domain{types: types})
	}
	if all, ok := node["allOf"].([]any); ok {
		for _, b := range all {
			if m, ok := b.(map[string]any); ok {
				if sub, ok := domainOf(m, depth+1); ok {
					dom = dom.narrow(sub)
				}
			}
		}
	}
	for _, k := range []string{"anyOf", "oneOf"} {
		if branches, ok := node[k].([]any); ok {
			if u, ok := union(branches, depth); ok {
				dom = dom.narrow(u)
			}
		}
	}
	if (dom.values == nil && dom.types == nil) || (dom.values != nil && len(dom.values) == 0) || (dom.types != nil && len(dom.types) == 0) {
		return domain{}, false
	}
	return dom, true
}

// union is what a value allowed by one of branches may be; ok is false
// when one of them allows any value.
func union(branches []any, depth int) (domain, bool) {
	var u domain
	allValues := true
	for _, b := range branches {
		if b == false {
			continue // allows nothing
		}
		m, ok := b.(map[string]any)
		if !ok {
			return domain{}, false
		}
		sub, ok := domainOf(m, depth+1)
		if !ok {
			return domain{}, false
		}
		types := sub.types
		if types == nil { // values only: their types
			for _, v := range sub.values {
				types = append(types, jsonType(v))
			}
		}
		u.types = append(u.types, types...)
		if sub.values == nil {
			allValues = false
		}
		u.values = append(u.values, sub.values...)
	}
	if !allValues {
		u.values = nil
	}
	return u, u.types != nil
}

// narrow is what both d and o allow.
func (d domain) narrow(o domain) domain {
	switch {
	case d.values == nil:
		d.values = o.values
	case o.values != nil:
		d.values = slices.DeleteFunc(slices.Clone(d.values), func(v any) bool {
			return !slices.ContainsFunc(o.values, func(w any) bool { return jsonEqual(v, w) })
		})
	}
	switch {
	case d.types == nil:
		d.types = o.types
	case o.types != nil:
		var both []string
		for _, t := range d.types {
			if typeAllows(o.types, t) && !slices.Contains(both, t) {
				both = append(both, t)
			}
		}
		for _, t := range o.types {
			if typeAllows(d.types, t) && !slices.Contains(both, t) {
				both = append(both, t)
			}
		}
		if both == nil {
			both = []string{}
		}
		d.types = both
	}
	return d
}

// typeAllows is whether a value of JSON type t may have one of types
// (an integer is a number).
func typeAllows(types []string, t string) bool {
	return slices.Contains(types, t) || (t == "integer" && slices.Contains(types, "number"))
}

// refuses says why d refuses lit, which path of a's output is compared
// with, then a "did you mean" when one fits; "" when d allows it.
func (d domain) refuses(lit conditions.Literal, a *Agent, path string) string {
	v := lit.Value
	schema := fmt.Sprintf("the output_schema of agent %q", a.Name)
	if d.values != nil && !slices.ContainsFunc(d.values, func(w any) bool { return jsonEqual(v, w) }) {
		if len(d.values) == 1 {
			return fmt.Sprintf("%s is not %s, the only value %s allows there%s", lit.Text, exprValue(d.values[0]), schema, didYouMean(v, d.values))
		}
		return fmt.Sprintf("%s is not one of %s, the values %s allows there%s", lit.Text, valueList(d.values), schema, didYouMean(v, d.values))
	}
	if d.types == nil || typeAllows(d.types, jsonType(v)) {
		return ""
	}
	var fits []any
	if s, ok := v.(string); ok {
		if n, err := strconv.ParseFloat(s, 64); err == nil && !math.IsInf(n, 0) && !math.IsNaN(n) {
			fits = append(fits, n)
		}
		if s == "true" || s == "false" {
			fits = append(fits, s == "true")
		}
	} else {
		fits = append(fits, exprValue(v)) // the same, as a string
	}
	hint := ""
	for _, f := range fits {
		if typeAllows(d.types, jsonType(f)) {
			hint = "; did you mean " + exprValue(f) + "?"
			break
		}
	}
	return fmt.Sprintf("%s is %s, and %s says %s is %s%s", lit.Text, typeWords(jsonType(v)), schema, path, orWords(d.types), hint)
}

// didYouMean is the value of values closest to v (compared as text), as
// `; did you mean X?`, or "".
func didYouMean(v any, values []any) string {
	text := func(x any) string {
		if s, ok := x.(string); ok {
			return s
		}
		return exprValue(x)
	}
	var forms []string
	for _, w := range values {
		forms = append(forms, text(w))
	}
	best := closest(text(v), forms)
	if best == "" {
		return ""
	}
	return "; did you mean " + exprValue(values[slices.Index(forms, best)]) + "?"
}

// maxListed is how many values of an enum a message lists.
const maxListed = 10

// valueList lists values as an expression writes them, the first
// maxListed of them.
func valueList(values []any) string {
	var parts []string
	for i, v := range values {
		if i == maxListed {
			parts = append(parts, fmt.Sprintf("and %d more", len(values)-maxListed))
			break
		}
		parts = append(parts, exprValue(v))
	}
	return strings.Join(parts, ", ")
}

// exprValue writes v as an expression would: a string quoted, a number,
// true, false or nil, anything else as JSON.
func exprValue(v any) string {
	switch x := v.(type) {
	case nil:
		return "nil"
	case string:
		return strconv.Quote(x)
	}
	if f, ok := toFloat(v); ok {
		return strconv.FormatFloat(f, 'f', -1, 64)
	}
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}

// jsonType is the JSON Schema type of v: an integral number is an integer.
func jsonType(v any) string {
	switch x := v.(type) {
	case nil:
		return "null"
	case string:
		return "string"
	case bool:
		return "boolean"
	case []any:
		return "array"
	case map[string]any:
		return "object"
	default:
		if f, ok := toFloat(x); ok {
			if f == math.Trunc(f) && !math.IsInf(f, 0) {
				return "integer"
			}
			return "number"
		}
	}
	return "object"
}

// typeWords is a JSON Schema type in a sentence.
func typeWords(t string) string {
	switch t {
	case "integer", "object", "array":
		return "an " + t
	case "null":
		return "null"
	case "number":
		return "a number with a fraction"
	}
	return "a " + t
}

// orWords lists types in a sentence: `a string or null`.
func orWords(types []string) string {
	var words []string
	for _, t := range types {
		w := typeWords(t)
		if t == "number" {
			w = "a number"
		}
		if !slices.Contains(words, w) {
			words = append(words, w)
		}
	}
	if len(words) < 2 {
		return strings.Join(words, "")
	}
	return strings.Join(words[:len(words)-1], ", ") + " or " + words[len(words)-1]
}

// jsonEqual compares two scalar JSON values, numbers by value.
func jsonEqual(a, b any) bool {
	fa, aNum := toFloat(a)
	fb, bNum := toFloat(b)
	if aNum || bNum {
		return aNum && bNum && fa == fb
	}
	switch a.(type) {
	case string, bool, nil:
		return a == b
	}
	return false
}

// toFloat is v as a number, when it is one.
func toFloat(v any) (float64, bool) {
	switch x := v.(type) {
	case int:
		return float64(x), true
	case int64:
		return float64(x), true
	case uint64:
		return float64(x), true
	case float64:
		return x, true
	case json.Number:
		f, err := x.Float64()
		return f, err == nil
	}
	return 0, false
}
