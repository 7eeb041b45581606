package conditions

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/ensemble-run/ensemble/internal/jsonvalue"
)

// Template is text with `{{ EXPR }}` placeholders, each an expression over
// the conditions' names and, in a fan-out instance, item, index and count
// (docs/semantics.md#what-an-agent-receives). A template that is exactly
// one placeholder (spaces around it aside) gives the expression's value
// itself; any other gives text, each value rendered as text (a string as
// it is, anything else as compact JSON). It is immutable and safe for
// concurrent use.
type Template struct {
	Source string
	parts  []templatePart
	// Names are the names the placeholders read, as a Program's (its
	// ContextKeys, ExecutionKeys and ContextFields), at their line and
	// column in the template; its program is nil.
	Names Program
	// whole is set for a template that is exactly one placeholder.
	whole bool
	// fanOut: the placeholders were compiled with item, index and count.
	fanOut bool
	// request: the placeholders were compiled with body and headers
	// (CompileRequestTemplate).
	request bool
}

// templatePart is a literal text or, when prog is set, a placeholder.
type templatePart struct {
	text string
	prog *Program
}

// Item is what a fan-out instance adds to a template's names: its item,
// its position (from 0) and the list's length.
type Item struct {
	Value        any
	Index, Count int
}

// itemEnv is the names a placeholder of a fan-out agent's template may
// use: the conditions' and its instance's. count is then the list's length,
// not expr's builtin.
type itemEnv struct {
	Env
	Item  any `expr:"item"`
	Index int `expr:"index"`
	Count int `expr:"count"`
}

// itemEvalEnv is itemEnv with the evaluation's meter, as evalEnv is Env.
type itemEvalEnv struct {
	itemEnv
	m *meter
}

// templateWhat names a template in messages.
const templateWhat = "template"

// CompileTemplate parses src into its literal parts and placeholders, and
// compiles each placeholder as CompileSelect does a select. With fanOut
// (the template of an agent with a fan_out), the placeholders may also
// name item, index and count. A problem is a *CompileError whose Line and
// Column are those of the problem in src.
func CompileTemplate(src string, fanOut bool) (*Template, error) {
	checkEnv, runEnv := any(Env{}), any(evalEnv{})
	if fanOut {
		checkEnv, runEnv = itemEnv{}, &itemEvalEnv{}
	}
	return compileTemplate(src, fanOut, false, checkEnv, runEnv)
}

func compileTemplate(src string, fanOut, request bool, checkEnv, runEnv any) (*Template, error) {
	if len(src) > MaxLength*4 {
		return nil, &CompileError{Msg: fmt.Sprintf("template is too long (%d bytes; at most %d)", len(src), MaxLength*4), What: templateWhat}
	}
	t := &Template{Source: src, fanOut: fanOut, request: request}
	rest, off := src, 0 // off: byte offset of rest in src
	for {
		open := strings.Index(rest, "{{")
		if open < 0 {
			if rest != "" {
				t.parts = append(t.parts, templatePart{text: rest})
			}
			break
		}
		if open > 0 {
			t.parts = append(t.parts, templatePart{text: rest[:open]})
		}
		body := rest[open+2:]
		end := placeholderEnd(body)
		start := off + open + 2 // byte offset of the expression in src
		if end < 0 {
			line, col := bytePosition(src, off+open)
			return nil, &CompileError{Line: line, Column: col, Msg: "{{ is not closed by }}", What: templateWhat}
		}
		expr := body[:end]
		if strings.TrimSpace(expr) == "" {
			line, col := bytePosition(src, off+open)
			return nil, &CompileError{Line: line, Column: col, Msg: "empty placeholder {{ }}", What: templateWhat}
		}
		p, err := compile(expr, templateWhat, checkEnv, runEnv)
		if err != nil {
			ce := err.(*CompileError)
			if name, ok := strings.CutPrefix(ce.Msg, "unknown name "); ok && !fanOut && !request && slices.Contains(itemNames, name) {
				ce.Msg = name + " is only known to an agent with a fan_out (item, index and count are its instance's)"
			}
			ce.Line, ce.Column = shift(src, start, ce.Line, ce.Column)
			if ce.Line == 0 { // no position from expr: the placeholder's
				ce.Line, ce.Column = bytePosition(src, off+open)
			}
			return nil, ce
		}
		t.add(src, start, p)
		t.parts = append(t.parts, templatePart{prog: p})
		used := open + 2 + end + 2
		rest, off = rest[used:], off+used
	}
	n := 0
	for _, p := range t.parts {
		if p.prog != nil {
			n++
		} else if strings.TrimSpace(p.text) != "" {
			n = 2 // text beside a placeholder: text
		}
	}
	t.whole = n == 1
	return t, nil
}

// placeholderEnd is the byte offset in body of the }} that closes a
// placeholder: the first one outside the expression's string literals and
// its own braces (`{{ {"a": {"b": 1}} }}`); -1 when there is none.
func placeholderEnd(body string) int {
	depth := 0
	var quote byte
	for i := 0; i < len(body); i++ {
		c := body[i]
		switch {
		case quote != 0:
			if c == '\\' && quote != '`' {
				i++
			} else if c == quote {
				quote = 0
			}
		case c == '"' || c == '\'' || c == '`':
			quote = c
		case c == '{':
			depth++
		case c == '}' && depth > 0:
			depth--
		case c == '}' && i+1 < len(body) && body[i+1] == '}':
			return i
		}
	}
	return -1
}

// add records the names p reads, at their positions in the template (p's
// source starts at byte offset start of src).
func (t *Template) add(src string, start int, p *Program) {
	for _, k := range p.ContextKeys {
		k.Line, k.Column = shift(src, start, k.Line, k.Column)
		t.Names.ContextKeys = append(t.Names.ContextKeys, k)
	}
	for _, k := range p.ExecutionKeys {
		k.Line, k.Column = shift(src, start, k.Line, k.Column)
		t.Names.ExecutionKeys = append(t.Names.ExecutionKeys, k)
	}
	for _, f := range p.ContextFields {
		f.Line, f.Column = shift(src, start, f.Line, f.Column)
		t.Names.ContextFields = append(t.Names.ContextFields, f)
	}
	for _, c := range p.Comparisons {
		c.Line, c.Column = shift(src, start, c.Line, c.Column)
		c.Literals = slices.Clone(c.Literals)
		for i := range c.Literals {
			l := &c.Literals[i]
			l.Line, l.Column = shift(src, start, l.Line, l.Column)
		}
		t.Names.Comparisons = append(t.Names.Comparisons, c)
	}
	t.Names.UsesHistory = t.Names.UsesHistory || p.UsesHistory
}

// shift turns a 1-based line and column of an expression that starts at
// byte offset start of src into those of src; 0, 0 stays 0, 0.
func shift(src string, start, line, col int) (int, int) {
	if line == 0 {
		return 0, 0
	}
	l0, c0 := bytePosition(src, start)
	if line == 1 {
		return l0, c0 + col - 1
	}
	return l0 + line - 1, col
}

// bytePosition is the 1-based line and (character) column of a byte
// offset of src.
func bytePosition(src string, offset int) (line, col int) {
	before := src[:offset]
	line = strings.Count(before, "\n") + 1
	if i := strings.LastIndexByte(before, '\n'); i >= 0 {
		before = before[i+1:]
	}
	return line, utf8.RuneCountInString(before) + 1
}

// UsesHistory reports whether a placeholder names history: the
// environment of one that does not may leave Env.History nil.
func (t *Template) UsesHistory() bool { return t.Names.UsesHistory }

// Whole reports whether the template is exactly one placeholder, whose
// value it gives as it is.
func (t *Template) Whole() bool { return t.whole }

// EvalContext evaluates the placeholders in the sandbox, all of them
// within the budgets of one condition, over env and, for a fan-out instance, item
// (nil otherwise). The value is the placeholder's value, as JSON would
// decode it, for a template that is one placeholder; otherwise the text.
// A run-time error is a *RuntimeError whose Column is that of the problem
// in the template's line; text longer than MaxBytes is one too.
func (t *Template) EvalContext(ctx context.Context, env *Env, item *Item) (any, error) {
	if t.request {
		return nil, &RuntimeError{Msg: "a request template is evaluated with EvalRequest", What: templateWhat}
	}
	return t.eval(func(p *Program, left *meter, memory uint) (any, error) {
		if !t.fanOut {
			item = nil
		} else if item == nil {
			item = &Item{}
		}
		return p.evalValue(ctx, env, item, left, memory)
	})
}

// eval renders the template, each placeholder's value given by value
// within the budgets left.
func (t *Template) eval(value func(p *Program, left *meter, memory uint) (any, error)) (any, error) {
	var b strings.Builder
	// One condition's budgets for the whole template: its placeholders
	// share the steps and bytes, and split the VM memory evenly, so that
	// many placeholders cannot multiply the work of one.
	n := 0
	for _, p := range t.parts {
		if p.prog != nil {
			n++
		}
	}
	left := &meter{bytes: MaxBytes, steps: MaxSteps}
	memory := uint(MaxMemory / max(n, 1))
	for _, p := range t.parts {
		if p.prog == nil {
			if !t.whole {
				b.WriteString(p.text)
			}
			continue
		}
		v, err := value(p.prog, left, memory)
		if err == nil {
			err = jsonvalue.Valid(v)
		}
		if err != nil {
			if re, ok := err.(*RuntimeError); ok {
				re.What = templateWhat
				re.Msg = cmp.Or(re.Msg, "failed")
				if re.Column > 0 {
					re.Msg = fmt.Sprintf("{{ %s }}: %s", strings.TrimSpace(p.prog.Source), re.Msg)
					re.Column = 0
				}
				return nil, re
			}
			return nil, &RuntimeError{Msg: fmt.Sprintf("{{ %s }}: %s", strings.TrimSpace(p.prog.Source), oneLine(err.Error())), What: templateWhat, cause: err}
		}
		v = jsonvalue.Plain(v)
		if t.whole {
			return v, nil
		}
		b.WriteString(jsonvalue.Text(v))
		if b.Len() > MaxBytes {
			return nil, &RuntimeError{Msg: fmt.Sprintf("its text is longer than %d bytes", MaxBytes), What: templateWhat, cause: ErrMemoryBudget}
		}
	}
	return b.String(), nil
}

// evalValue runs p in the sandbox over env and, when p was compiled with
// them, a fan-out instance's item, index and count (item is then not nil),
// whatever the type of its value: within the steps and bytes left (which
// it counts off) and memory.
func (p *Program) evalValue(ctx context.Context, env *Env, item *Item, left *meter, memory uint) (result any, err error) {
	r, err := runnerFor(ctx, "")
	if err != nil {
		return nil, err
	}
	defer recovered(&result, &err, "")
	var vmEnv any = &r.env
	if env != nil {
		r.env.Env = *env
	}
	if item != nil {
		// The template of a fan-out agent: compiled against itemEvalEnv.
		ie := &itemEvalEnv{itemEnv: itemEnv{Env: r.env.Env, Item: item.Value, Index: item.Index, Count: item.Count}, m: &r.meter}
		vmEnv = ie
	}
	return r.runMetered(ctx, p, vmEnv, left, memory, r.env.Reads)
}

// runnerFor is a runner of the pool, for an evaluation of what (a
// *RuntimeError's What), unless ctx is done. The evaluation puts it back
// when it ends, unless it panicked (recovered): a runner in an unknown
// state does not go back.
func runnerFor(ctx context.Context, what string) (*runner, error) {
	if err := ctx.Err(); err != nil {
		return nil, &RuntimeError{Msg: oneLine(err.Error()), What: what, cause: err}
	}
	return runnerPool.Get().(*runner), nil
}

// recovered, deferred by an evaluation of what, turns a panic of the VM
// into a *RuntimeError and no result.
func recovered[T any](result *T, err *error, what string) {
	if rec := recover(); rec != nil {
		var zero T
		*result, *err = zero, &RuntimeError{Msg: oneLine(fmt.Sprint(rec)), What: what}
	}
}

// runMetered runs p on r's VM against env, metered from what left holds
// (which it updates) under the memory budget, notes the misses in reads
// (nil: none kept), and puts r back in the pool.
func (r *runner) runMetered(ctx context.Context, p *Program, env any, left *meter, memory uint, reads *Reads) (any, error) {
	r.meter = meter{bytes: left.bytes, steps: left.steps, ctx: ctx, reads: reads, source: strings.TrimSpace(p.Source)}
	r.vm.MemoryBudget = memory
	out, runErr := r.vm.Run(p.prog, env)
	left.bytes, left.steps = r.meter.bytes, r.meter.steps
	r.reset()
	runnerPool.Put(r)
	if runErr != nil {
		return nil, runtimeError(runErr, p.Source)
	}
	return out, nil
}

// itemNames are the names only a fan-out instance's template has.
var itemNames = []string{"item", "index", "count"}
