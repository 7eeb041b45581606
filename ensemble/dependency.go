package ensemble

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/ensemble-run/ensemble/internal/conditions"
	"github.com/ensemble-run/ensemble/internal/opaque"
)

var dependencyKeys = []string{"agent_name", "condition", "requires_all", "max_executions", "select", "on"}

// dependencies decodes an agent's dependencies: each a name (a required edge)
// or {agent_name, condition, requires_all, max_executions}.
func (d *decoder) dependencies(f field, a *Agent, agentWhere string) []*Dependency {
	var deps []*Dependency
	first := map[string]*yaml.Node{}
	for i, n := range d.list(f) {
		dep := &Dependency{Pos: pos(n), RequiresAll: true}
		nameNode := resolve(n)
		switch nameNode.Kind {
		case yaml.ScalarNode:
			if n.Kind == yaml.ScalarNode && n.ShortTag() == "!!str" && n.Value != "" {
				dep.AgentName = n.Value // the usual case, with no label to build
				break
			}
			f.val, f.name = n, fmt.Sprintf("dependency #%d", i+1)
			dep.AgentName = d.str(f)
			d.need(f, dep.AgentName == "")
		case yaml.MappingNode:
			where := d.itemName("dependency", n, "agent_name", i) + " of " + agentWhere
			m := d.mapping(n, where, dependencyKeys...)
			dep.AgentName = d.str(m.get("agent_name"))
			d.need(m.get("agent_name"), dep.AgentName == "")
			if v := m.get("agent_name").val; v != nil {
				nameNode = v
			}
			d.condition(m.get("condition"), dep)
			d.selectExpr(m.get("select"), dep)
			if f := m.get("on"); f.ok() {
				switch on := d.str(f); on {
				case "failure":
					dep.OnFailure = true
				case "always":
					dep.OnAlways = true
				case "success":
				default:
					d.bad(f, "must be success, failure or always, got %q", on)
				}
			}
			if rf := m.get("requires_all"); rf.ok() {
				dep.RequiresAll = d.boolean(rf)
			}
			dep.MaxExecutions = d.positive(m.get("max_executions"))
		default:
			d.errorf(n, "%s: dependency #%d must be an agent name or a mapping, got %s", agentWhere, i+1, d.describe(n))
			continue
		}
		switch name := dep.AgentName; {
		case name == "" || resolve(nameNode).Kind != yaml.ScalarNode:
			d.badDeps[dep] = true
		case name == a.Name:
			d.errorf(nameNode, "%s depends on itself", agentWhere)
			d.badDeps[dep] = true
		case d.agentNodes[name] == nil:
			d.errorf(nameNode, "%s depends on unknown agent %q%s", agentWhere, name, suggest(name, slices.Sorted(maps.Keys(d.agentNodes))))
			d.badDeps[dep] = true
		case first[name] != nil:
			d.errorf(nameNode, "%s depends on %q twice (first on line %d)", agentWhere, name, first[name].Line)
		default:
			first[name] = nameNode
		}
		deps = append(deps, dep)
	}
	return deps
}

// condition compiles a dependency's condition (docs/semantics.md#conditions).
func (d *decoder) condition(f field, dep *Dependency) {
	var p *conditions.Program
	dep.Condition, p = d.boolExpr(f, "condition")
	dep.Program = opaque.Make[CompiledCondition](p)
}

// when compiles an agent's guard (docs/semantics.md#guards-that-skip): a
// boolean expression over the names a condition sees.
func (d *decoder) when(f field, a *Agent) {
	var p *conditions.Program
	a.When, p = d.boolExpr(f, "when")
	a.WhenProgram = opaque.Make[CompiledCondition](p)
}

// boolExpr compiles a boolean expression, a condition or a guard, and
// queues its names for checking (contextKeys); "" and nil when f is absent.
func (d *decoder) boolExpr(f field, what string) (string, *conditions.Program) {
	if !f.ok() {
		return "", nil
	}
	src := d.str(f)
	d.need(f, strings.TrimSpace(src) == "")
	if strings.TrimSpace(src) == "" {
		return src, nil
	}
	p, err := conditions.Compile(src)
	if err != nil {
		d.bad(f, "does not compile: %v", err)
		return src, nil
	}
	d.conds = append(d.conds, condRef{f: f, p: p, what: what})
	return src, p
}

// selectExpr compiles a dependency's select
// (docs/semantics.md#choosing-what-an-edge-delivers).
func (d *decoder) selectExpr(f field, dep *Dependency) {
	if !f.ok() {
		return
	}
	dep.Select = d.str(f)
	d.need(f, strings.TrimSpace(dep.Select) == "")
	if strings.TrimSpace(dep.Select) == "" {
		return
	}
	s, err := conditions.CompileSelect(dep.Select)
	if err != nil {
		d.bad(f, "does not compile: %v", err)
		return
	}
	dep.SelectProgram = opaque.Make[CompiledSelect](s)
	d.conds = append(d.conds, condRef{f: f, p: &s.Program, what: "select"})
	d.selects = append(d.selects, selectRef{f, dep})
}

// condRef is a compiled condition and its field.
type condRef struct {
	f    field
	p    *conditions.Program
	what string // "condition", "when", "select", "fan_out.over" or "template"
	tmpl bool   // a template's names: p has their places in the template
}

// contextKeys checks, once every agent's state key is known, that the
// conditions name only keys of context that some agent fills, and only
// agents in executions: a misspelled key would make its condition false
// (or true), silently, at every turn.
func (d *decoder) contextKeys() {
	var known []string
	for _, c := range d.conds {
		for _, k := range c.p.ContextKeys {
			if _, ok := d.stateKeys[k.Name]; ok {
				continue
			}
			if known == nil {
				known = slices.Sorted(maps.Keys(d.stateKeys))
			}
			d.badName(c, k.Line, k.Column, "names context.%s, but no agent has the state key %q%s (%s)", k.Name, k.Name, suggest(k.Name, known), keyAt(k, c.what))
		}
		// executions.<agent> of no agent is 0 at every turn: a loop
		// guard such as executions.writr < 5 would never stop the loop.
		for _, k := range c.p.ExecutionKeys {
			if _, ok := d.agentNodes[k.Name]; ok {
				continue
			}
			hint := suggest(k.Name, slices.Sorted(maps.Keys(d.agentNodes)))
			if use, ok := d.stateKeys[k.Name]; ok {
				hint = fmt.Sprintf("; %q is the state key of agent %q, and executions counts by agent name", k.Name, use.agent)
			}
			d.badName(c, k.Line, k.Column, "names executions.%s, but no agent is named %q%s (%s)", k.Name, k.Name, hint, keyAt(k, c.what))
		}
	}
}

// keyAt is where k is in a condition or select, for a message.
func keyAt(k conditions.ContextKey, what string) string {
	at := fmt.Sprintf("column %d of the %s", k.Column, what)
	if k.Line > 1 {
		at = fmt.Sprintf("line %d, %s", k.Line, at)
	}
	return at
}
