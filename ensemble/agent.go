package ensemble

import (
	"cmp"
	"maps"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"
)

var (
	conversationKeys = []string{"max_turns", "state_key", "triggers_conversation"}
)

// agentKeys are the keys an agent may have: its name, the kinds' keys, the
// fields every agent takes, then each kind's own fields.
func (d *decoder) agentKeys() []string { return d.keyLists().agent }

// agentKeyLists are the lists of keys that decoding an agent reads, made
// once per file rather than once per agent.
type agentKeyLists struct {
	agent    []string   // every key an agent may have (agentKeys)
	mapping  []string   // those and a dependency's, read to hint where they belong
	kindKeys []string   // the key of each kind: script, model_profile...
	fields   [][]string // the fields of each kind, in the order of d.kinds
}

// AgentKeys lists every key an agent of one of kinds may have: name, the
// kinds' keys, the keys every agent has, then each kind's fields.
func AgentKeys(kinds []Kind) []string {
	keys := []string{"name"}
	for _, k := range kinds {
		keys = append(keys, k.Key())
	}
	keys = append(keys, "input", "dependencies", "trigger", "when", "conversation", "timeout_seconds", "fan_out", "budget", "retry", "output_schema")
	for _, k := range kinds {
		keys = append(keys, k.Fields()...)
	}
	return keys
}

func (d *decoder) keyLists() *agentKeyLists {
	if d.keys != nil {
		return d.keys
	}
	l := &agentKeyLists{agent: AgentKeys(d.kinds)}
	for _, k := range d.kinds {
		l.kindKeys = append(l.kindKeys, k.Key())
		l.fields = append(l.fields, k.Fields())
	}
	l.mapping = append(slices.Clone(l.agent), dependencyKeys...)
	// Shared by every agent of the file: clipped, so that an append to
	// one never writes into them.
	l.agent, l.kindKeys = slices.Clip(l.agent), slices.Clip(l.kindKeys)
	d.keys = l
	return l
}

// agents decodes the agents: list. Names are gathered first, so that
// dependencies and limits can be checked against every agent.
func (d *decoder) agents(f field) []*Agent {
	items := d.list(f)
	d.need(f, len(items) == 0)
	d.agentNodes = map[string]*yaml.Node{}
	d.badDeps = map[*Dependency]bool{}
	d.stateKeys = map[string]stateKeyUse{}
	for _, n := range items {
		if name := d.peek(n, "name"); name != "" && d.agentNodes[name] == nil {
			d.agentNodes[name] = n
		}
	}
	var agents []*Agent
	for i, n := range items {
		if a := d.agent(n, i); a != nil {
			agents = append(agents, a)
		}
	}
	d.contextKeys()
	d.contextFields(agents)
	d.comparedLiterals(agents)
	return agents
}

func (d *decoder) agent(n *yaml.Node, i int) *Agent {
	where := d.itemName("agent", n, "name", i)
	lists := d.keyLists()
	agentKeys := lists.agent
	// The keys of a dependency are taken here, to be reported with a hint.
	m := d.mapping(n, where, lists.mapping...)
	if m == nil {
		return nil
	}
	for _, k := range dependencyKeys {
		if f := m.get(k); f.ok() {
			example := "agent_name: X, " + k + ": ..."
			if k == "agent_name" {
				example = "agent_name: X, ..."
			}
			d.errorf(f.key, "unknown key %q in %s: it belongs to a dependency: dependencies: [{%s}]", k, where, example)
		}
	}
	a := &Agent{Pos: pos(n), Name: d.str(m.get("name"))}
	d.need(m.get("name"), a.Name == "")
	switch first := d.agentNodes[a.Name]; {
	case a.Name == "":
	case !namePattern.MatchString(a.Name):
		d.bad(m.get("name"), "%q is invalid: use only a-z, 0-9, _ and -", a.Name)
	case first != n:
		d.errorf(m.get("name").val, "duplicate agent name %q (first declared on line %d)", a.Name, first.Line)
	}

	keys := lists.kindKeys
	var found []string
	var kinds []Kind
	for _, k := range d.kinds {
		if m.get(k.Key()).ok() {
			found = append(found, k.Key())
			kinds = append(kinds, k)
		}
	}
	switch len(kinds) {
	case 0:
		if d.misspelledKind(n, agentKeys) {
			break // reported as an unknown key with "did you mean"
		}
		d.errorf(n, "%s: %s are mutually exclusive; exactly one is required, found none", where, enumerate(keys))
	case 1:
		a.Kind = kinds[0]
	default:
		d.errorf(m.get(found[1]).key, "%s: %s are mutually exclusive; found %s", where, enumerate(keys), enumerate(found))
	}
	if a.Kind != nil {
		d.foreignFields(m, a.Kind, lists.fields, where)
	}
	// An agent of no clear kind has the fields of every kind checked.
	fs := &Fields{d: d, m: m, where: where, a: a}
	for _, k := range d.kinds {
		if a.Kind == nil || a.Kind == k {
			k.Decode(fs, a)
		}
	}
	if !fs.refused["output_schema"] {
		a.OutputSchema = d.agentOutputSchema(m.get("output_schema"), where)
	}

	a.Dependencies = d.dependencies(m.get("dependencies"), a, where)
	d.when(m.get("when"), a)
	if !fs.refused["fan_out"] {
		a.FanOut = d.fanOut(m.get("fan_out"), a, where)
	}
	if !fs.refused["input"] {
		a.Input = d.template(m.get("input"), a, a.FanOut != nil)
	}
	var keyNode *yaml.Node
	a.Conversation, keyNode = d.conversation(m.get("conversation"))
	d.fanOutConversation(m.get("conversation"), a, where)
	d.stateKey(a, m.get("name").val, keyNode, d.agentNodes[a.Name] != n)
	a.Timeout = d.seconds(m.get("timeout_seconds"))
	a.Budget, a.Retry = d.budget(m.get("budget")), d.retry(m.get("retry"))
	if f := m.get("trigger"); f.ok() {
		a.triggerSet = true
		switch t := d.str(f); t {
		case "all":
			a.TriggerAll = true
		case "any":
		default:
			d.bad(f, "must be any or all, got %q", t)
		}
	}
	return a
}

// misspelledKind reports whether agent n has an unknown key closest to a
// kind's key (script, model_profile, ask).
func (d *decoder) misspelledKind(n *yaml.Node, agentKeys []string) bool {
	n = resolve(n)
	for i := 0; i+1 < len(n.Content); i += 2 {
		k := n.Content[i].Value
		if slices.Contains(agentKeys, k) {
			continue
		}
		near := closest(k, agentKeys)
		for _, kind := range d.kinds {
			if kind.Key() == near {
				return true
			}
		}
	}
	return false
}

// agentTools checks an agent's tool names against the declared tools.
func (d *decoder) agentTools(f field, names []string, where string) {
	seen := map[string]bool{}
	for i, name := range names {
		n := resolve(f.val).Content[i]
		switch {
		case resolve(n).Kind != yaml.ScalarNode: // reported by strings
		case strings.Contains(name, "."):
			d.mcpTool(n, name, where)
		case d.tools[name] == nil:
			d.errorf(n, "%s: unknown tool %q%s", where, name, suggest(name, slices.Sorted(maps.Keys(d.tools))))
		case seen[name]:
			d.errorf(n, "%s: tool %q listed twice", where, name)
		}
		seen[name] = true
	}
}

// conversation decodes an agent's conversation block; max_turns defaults to 1.
// It also returns the state_key's node, nil when absent.
func (d *decoder) conversation(f field) (Conversation, *yaml.Node) {
	c := Conversation{MaxTurns: DefaultMaxTurns}
	if !f.ok() {
		return c, nil
	}
	m := d.mapping(f.val, f.nested(), conversationKeys...)
	if m == nil {
		return c, nil
	}
	c.MaxTurns = cmp.Or(d.positive(m.get("max_turns")), DefaultMaxTurns)
	c.StateKey = d.str(m.get("state_key"))
	if m.get("state_key").ok() {
		d.need(m.get("state_key"), c.StateKey == "")
	}
	c.TriggersConversation = d.boolean(m.get("triggers_conversation"))
	return c, m.get("state_key").val
}

// stateKey checks that no earlier agent stores its output under a's state
// key: outputs are stored, and delivered to dependents, by state key, so two
// agents sharing one would be handed each other's outputs. keyNode is the
// state_key's node, nil when a uses its name (at nameNode); repeated is true
// when an earlier agent has a's name (reported as such, not again here).
func (d *decoder) stateKey(a *Agent, nameNode, keyNode *yaml.Node, repeated bool) {
	key := a.StateKey()
	if key == "" || (keyNode == nil && repeated) {
		return
	}
	at := nameNode
	if keyNode != nil {
		at = keyNode
	}
	first, taken := d.stateKeys[key]
	switch {
	case !taken:
		d.stateKeys[key] = stateKeyUse{agent: a.Name, line: at.Line}
	case keyNode != nil:
		d.errorf(at, "agent %q: state_key %q is already the state key of agent %q (line %d); each agent needs its own",
			a.Name, key, first.agent, first.line)
	default:
		d.errorf(at, "agent %q: its state key %q (its name) is already the state key of agent %q (line %d); each agent needs its own",
			a.Name, key, first.agent, first.line)
	}
}

// stateKeyUse is the first agent storing its output under a state key.
type stateKeyUse struct {
	agent string
	line  int
}

// env decodes a script agent's extra environment: names to scalar values.
func (d *decoder) env(f field) map[string]string {
	if !f.ok() {
		return nil
	}
	m := d.mapping(f.val, f.nested())
	if m == nil {
		return nil
	}
	env := make(map[string]string, len(m.all()))
	for name, v := range m.all() {
		if !envNamePattern.MatchString(name) {
			d.errorf(v.key, "%s: %q is not a valid environment variable name", f.nested(), name)
		}
		env[name] = d.str(v)
	}
	return env
}

// enumerate joins words as "a, b and c".
func enumerate(words []string) string {
	if len(words) < 2 {
		return strings.Join(words, "")
	}
	return strings.Join(words[:len(words)-1], ", ") + " and " + words[len(words)-1]
}

// foreignFields reports each field of another kind that an agent of kind
// sets, once, naming every kind the field is for.
func (d *decoder) foreignFields(m fields, kind Kind, fields [][]string, where string) {
	owners := map[string][]string{}
	var order []string
	for i, k := range d.kinds {
		for _, key := range fields[i] {
			if owners[key] == nil {
				order = append(order, key)
			}
			owners[key] = append(owners[key], k.String())
		}
	}
	for _, key := range order {
		if m.get(key).ok() && !slices.Contains(owners[key], kind.String()) {
			d.errorf(m.get(key).key, "%s: %s is only for %s agents, not %s agents", where, key, enumerate(owners[key]), kind)
		}
	}
}
