package responses

import (
	"fmt"
	"math"

	"go.yaml.in/yaml/v3"

	"github.com/ensemble-run/ensemble/ensemble"
)

// parseYAML parses a responses file through a YAML node tree: any YAML,
// with every error positioned. With partial, the entries without problems
// are returned with the error (nil when the file is no mapping).
func parseYAML(name string, data []byte, lines *sourceLines, partial bool) (*Responses, error) {
	root, err := ensemble.ParseYAML(name, data) // YAML errors in plain words, as for ensemble files
	if err != nil {
		return nil, err
	}
	r := NewResponses()
	if root == nil {
		return r, nil // an empty file injects nothing
	}
	// One budget of converted nodes for the whole file: aliases may share
	// a value between responses, but never multiply the file past a few
	// times its own size (an alias bomb).
	p := &respParser{file: name, lines: lines, budget: 1<<20 + 4*countNodes(root)}
	if n, err := ensemble.ExpandedSize(root); err != nil || n > p.budget {
		// Measured, not expanded: a bomb of nested merge keys would take
		// seconds to convert before the budget ran out.
		p.errorf(root, "response is too large (too many aliases?)")
		return nil, p.err()
	}
	if root.Kind == yaml.ScalarNode && root.ShortTag() == "!!null" {
		return r, nil
	}
	if root.Kind != yaml.MappingNode {
		p.errorf(root, "a responses file is a mapping from agent name to a list of responses")
		return nil, p.err()
	}
	seen := map[string]*yaml.Node{}
	entries := 0
	for i := 0; i+1 < len(root.Content); i += 2 {
		k, v := root.Content[i], root.Content[i+1]
		if entries += 1 + len(v.Content); entries > MaxResponseEntries {
			return nil, tooManyEntries(name, k.Line, lines)
		}
		if k.Kind != yaml.ScalarNode || k.ShortTag() != "!!str" && k.ShortTag() != "!!int" {
			p.errorf(k, "expected an agent name")
			continue
		}
		agent := k.Value
		if first, dup := seen[agent]; dup {
			p.errorf(k, "agent %q is listed twice (first at line %d)", agent, first.Line)
			continue
		}
		seen[agent] = k
		ent := &ResponseEntry{Agent: agent, File: name, Pos: pos(k), src: sourceLine(lines, k.Line)}
		if p.entry(ent, v) {
			r.entries[agent] = ent
			r.order = append(r.order, agent)
		}
	}
	if err := p.err(); err != nil {
		if partial {
			return r, err
		}
		return nil, err
	}
	return r, nil
}

type respParser struct {
	file   string
	lines  *sourceLines
	errs   []*ensemble.Error
	more   int // errors found past MaxResponseErrors, counted only
	budget int // nodes left to convert: bounds alias expansion
}

func pos(n *yaml.Node) ensemble.Pos { return ensemble.Pos{Line: n.Line, Column: n.Column} }

func (p *respParser) errorf(n *yaml.Node, format string, args ...any) {
	if len(p.errs) >= MaxResponseErrors {
		p.more++
		return
	}
	p.errs = append(p.errs, &ensemble.Error{File: p.file, Line: n.Line, Column: n.Column,
		Message: fmt.Sprintf(format, args...), Source: sourceLine(p.lines, n.Line)})
}

func (p *respParser) err() error { return errorList(p.errs, p.more) }

// entry fills ent from the value node of an agent; false when it is wrong.
func (p *respParser) entry(ent *ResponseEntry, v *yaml.Node) bool {
	for v.Kind == yaml.AliasNode && v.Alias != nil {
		v = v.Alias
	}
	switch v.Kind {
	case yaml.SequenceNode:
		ok := true
		ent.Values = make([]any, 0, len(v.Content))
		ent.Lines = make([]int32, 0, len(v.Content))
		for _, item := range v.Content {
			val, good := p.value(item, 0)
			ok = ok && good
			ent.Values = append(ent.Values, val)
			ent.Lines = append(ent.Lines, int32(item.Line))
		}
		return ok
	case yaml.MappingNode:
		return p.simulate(ent, v)
	default:
		p.errorf(v, "responses for agent %q must be a list (put [ ] around a single response) or {simulate: {model_profile, prompt}}", ent.Agent)
		return false
	}
}

func (p *respParser) simulate(ent *ResponseEntry, v *yaml.Node) bool {
	ok := true
	var sim *yaml.Node
	for i := 0; i+1 < len(v.Content); i += 2 {
		k := v.Content[i]
		if k.Value == "simulate" {
			sim = v.Content[i+1]
			continue
		}
		p.errorf(k, "unknown key %q for agent %q: expected a list of responses, or simulate", k.Value, ent.Agent)
		ok = false
	}
	if sim == nil {
		if ok {
			p.errorf(v, "responses for agent %q must be a list (put [ ] around a single response) or {simulate: {model_profile, prompt}}", ent.Agent)
		}
		return false
	}
	for sim.Kind == yaml.AliasNode && sim.Alias != nil {
		sim = sim.Alias
	}
	if sim.Kind != yaml.MappingNode {
		p.errorf(sim, "simulate must be a mapping {model_profile, prompt}")
		return false
	}
	s := &Simulation{Pos: pos(sim)}
	var hasProfile, hasPrompt bool
	for i := 0; i+1 < len(sim.Content); i += 2 {
		k, val := sim.Content[i], sim.Content[i+1]
		switch k.Value {
		case "model_profile", "prompt":
			if val.Kind != yaml.ScalarNode || val.ShortTag() != "!!str" || val.Value == "" {
				p.errorf(val, "simulate.%s must be a non-empty string", k.Value)
				ok = false
				continue
			}
			if k.Value == "model_profile" {
				s.ModelProfile, s.Pos, hasProfile = val.Value, pos(val), true
				s.src = sourceLine(p.lines, val.Line)
			} else {
				s.Prompt, hasPrompt = val.Value, true
			}
		default:
			p.errorf(k, "unknown key %q in simulate (known: model_profile, prompt)", k.Value)
			ok = false
		}
	}
	if !hasProfile && ok {
		p.errorf(sim, "simulate needs a model_profile")
		ok = false
	}
	if !hasPrompt && ok {
		p.errorf(sim, "simulate needs a prompt (who the simulated user is)")
		ok = false
	}
	ent.Simulate = s
	return ok
}

// countNodes counts the nodes of a YAML tree, an alias as one.
func countNodes(n *yaml.Node) int {
	c := 1
	for _, k := range n.Content {
		c += countNodes(k)
	}
	return c
}

// value converts a YAML node to the value encoding/json would give.
func (p *respParser) value(n *yaml.Node, depth int) (any, bool) {
	p.budget--
	if p.budget < 0 {
		if p.budget == -1 {
			p.errorf(n, "response is too large (too many aliases?)")
		}
		return nil, false
	}
	if depth > 1000 {
		p.errorf(n, "response is nested too deeply")
		return nil, false
	}
	switch n.Kind {
	case yaml.DocumentNode:
		if len(n.Content) == 0 {
			return nil, true
		}
		return p.value(n.Content[0], depth+1)
	case yaml.AliasNode:
		if n.Alias == nil {
			p.errorf(n, "unknown alias")
			return nil, false
		}
		return p.value(n.Alias, depth+1)
	case yaml.SequenceNode:
		out := make([]any, 0, len(n.Content))
		ok := true
		for _, c := range n.Content {
			v, good := p.value(c, depth+1)
			ok = ok && good
			out = append(out, v)
		}
		return out, ok
	case yaml.MappingNode:
		out := map[string]any{}
		return out, p.mapping(out, n, depth, map[string]bool{})
	case yaml.ScalarNode:
		return p.scalar(n)
	}
	p.errorf(n, "unsupported YAML node")
	return nil, false
}

// mapping adds n's entries to out; explicit keys win over merged (<<) ones.
func (p *respParser) mapping(out map[string]any, n *yaml.Node, depth int, explicit map[string]bool) bool {
	ok := true
	var merges []*yaml.Node
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		if k.Kind == yaml.ScalarNode && k.ShortTag() == "!!merge" {
			merges = append(merges, v)
			continue
		}
		if k.Kind != yaml.ScalarNode {
			p.errorf(k, "object keys must be scalars")
			ok = false
			continue
		}
		if explicit[k.Value] {
			p.errorf(k, "key %q is defined twice", k.Value)
			ok = false
			continue
		}
		val, good := p.value(v, depth+1)
		ok = ok && good
		out[k.Value] = val
		explicit[k.Value] = true
	}
	for _, m := range merges {
		for m.Kind == yaml.AliasNode && m.Alias != nil {
			m = m.Alias
		}
		srcs := []*yaml.Node{m}
		if m.Kind == yaml.SequenceNode {
			srcs = m.Content
		}
		for _, src := range srcs {
			for src.Kind == yaml.AliasNode && src.Alias != nil {
				src = src.Alias
			}
			if src.Kind != yaml.MappingNode {
				p.errorf(src, "<< merges a mapping or a list of mappings")
				ok = false
				continue
			}
			tmp := map[string]any{}
			ok = p.mapping(tmp, src, depth+1, map[string]bool{}) && ok
			for k, v := range tmp {
				if _, set := out[k]; !set {
					out[k] = v
				}
			}
		}
	}
	return ok
}

func (p *respParser) scalar(n *yaml.Node) (any, bool) {
	switch tag := n.ShortTag(); tag {
	case "!!str", "!!timestamp", "!!binary":
		return n.Value, true
	case "!!null":
		return nil, true
	case "!!bool":
		var b bool
		if err := n.Decode(&b); err != nil {
			p.errorf(n, "%v", err)
			return nil, false
		}
		return b, true
	case "!!int", "!!float":
		var v any
		if err := n.Decode(&v); err != nil {
			p.errorf(n, "%v", err)
			return nil, false
		}
		var f float64
		switch x := v.(type) {
		case int:
			f = float64(x)
		case int64:
			f = float64(x)
		case uint64:
			f = float64(x)
		case float64:
			f = x
		default:
			p.errorf(n, "unsupported number %q", n.Value)
			return nil, false
		}
		if math.IsInf(f, 0) || math.IsNaN(f) {
			p.errorf(n, "%s is not a JSON number", n.Value)
			return nil, false
		}
		return f, true
	default:
		p.errorf(n, "unsupported YAML tag %s", tag)
		return nil, false
	}
}
