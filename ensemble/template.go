package ensemble

import (
	"fmt"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/ensemble-run/ensemble/internal/conditions"
	"github.com/ensemble-run/ensemble/internal/opaque"
)

// Template is an agent's field written as a template: its input (every
// kind), an LLM agent's prompt with a placeholder. Its `{{ EXPR }}`
// placeholders are expressions over the conditions' names, and item,
// index and count in a fan-out (docs/semantics.md#what-an-agent-receives).
// The engine evaluates the templates of an agent as it plans each of its
// executions (agent.Request.Templates).
type Template struct {
	Pos     Pos
	Field   string // the agent's key: input, prompt
	Source  string
	Program CompiledTemplate
}

// template decodes field f of agent a as a template: compiled, and its
// names checked against the state keys, the agents and the output schemas
// once every agent is decoded. fanOut is whether a has a fan_out. nil when
// the field is absent or bad.
func (d *decoder) template(f field, a *Agent, fanOut bool) *Template {
	if !f.ok() {
		return nil
	}
	src := d.str(f)
	if resolve(f.val).Kind != yaml.ScalarNode {
		return nil // reported by str
	}
	p, err := conditions.CompileTemplate(src, fanOut)
	if err != nil {
		ce, _ := err.(*conditions.CompileError)
		line, col := f.val.Line, f.val.Column
		if ce != nil && ce.Line > 0 {
			line, col = d.inTemplate(f.val, ce.Line, ce.Column)
		}
		d.errorAt(line, col, "%s does not compile: %v", f.label(), err)
		return nil
	}
	t := &Template{Pos: pos(f.val), Field: f.name, Source: src, Program: opaque.Make[CompiledTemplate](p)}
	d.conds = append(d.conds, condRef{f: f, p: &p.Names, what: "template", tmpl: true})
	a.Templates = append(a.Templates, t)
	return t
}

// inTemplate is the position in the file of a line and column of the
// template that is scalar n's value, when the file shows the template as
// it is there (a single line, plain or quoted without escapes, or a line
// of a block scalar); otherwise n's own position.
func (d *decoder) inTemplate(n *yaml.Node, line, col int) (int, int) {
	tlines := strings.Split(n.Value, "\n")
	if line < 1 || line > len(tlines) {
		return n.Line, n.Column
	}
	text := []rune(tlines[line-1])
	switch {
	case n.Style&(yaml.LiteralStyle|yaml.FoldedStyle) != 0:
		// A block scalar: its line k is the file's line n.Line+k, indented.
		fl := n.Line + line
		if n.Style&yaml.FoldedStyle != 0 || fl > len(d.lines) {
			return n.Line, n.Column
		}
		src := []rune(strings.TrimRight(d.lines[fl-1], "\r"))
		if !strings.HasSuffix(string(src), string(text)) {
			return n.Line, n.Column
		}
		return fl, len(src) - len(text) + col
	case line == 1 && len(tlines) == 1 && n.Line >= 1 && n.Line <= len(d.lines):
		src := []rune(d.lines[n.Line-1])
		start := n.Column - 1
		if n.Style&(yaml.DoubleQuotedStyle|yaml.SingleQuotedStyle) != 0 {
			start++
		}
		if start < 0 || start > len(src) || !strings.HasPrefix(string(src[start:]), string(text)) {
			return n.Line, n.Column
		}
		return n.Line, start + col
	}
	return n.Line, n.Column
}

// badName reports a problem of a name that c's expression reads, at
// line:col of the expression: for a template, at that place of the file
// when it can be found; otherwise at the field.
func (d *decoder) badName(c condRef, line, col int, format string, args ...any) {
	if !c.tmpl {
		d.bad(c.f, format, args...)
		return
	}
	fl, fc := d.inTemplate(c.f.val, line, col)
	d.errorAt(fl, fc, "%s %s", c.f.label(), fmt.Sprintf(format, args...))
}
