package llmorc

import (
	"bytes"
	"fmt"
	path "path"
	"slices"
	"sort"
	"strings"

	"go.yaml.in/yaml/v3"
)

// topLevel are the llm-orc ensemble keys that are converted.
var topLevel = []string{"name", "description", "default_task", "task", "agents", "output_schema", "max_concurrency"}

// agentKeys are the llm-orc agent keys that are converted (some of them
// only for some kinds, which convert reports).
var agentKeys = []string{"name", "depends_on", "fan_out", "input_key", "when", "timeout_seconds",
	"script", "parameters", "model_profile", "model", "provider", "system_prompt", "temperature",
	"max_tokens", "output_format", "fallback_model_profile", "ensemble", "loop", "dispatch",
	"options", "ollama_format"}

// conv is the conversion of one ensemble.
type conv struct {
	im      *importer
	src     *source
	out     *outEnsemble
	names   map[string]string // llm-orc agent name → ensemble agent name
	used    map[string]bool   // profiles the agents use
	derived map[string]*outProfile
	// dispatchers are the file's dispatch agents
	dispatchers []dispatchAt
}

func (im *importer) convert(s *source) ([]byte, error) {
	c := im.conv(s)
	return c.encode()
}

// conv converts s.
func (im *importer) conv(s *source) *conv {
	c := &conv{im: im, src: s, names: map[string]string{}, used: map[string]bool{}, derived: map[string]*outProfile{}}
	root := s.root
	c.out = &outEnsemble{Version: 1, Name: s.name, Description: str(get(root, "description"))}
	if n := get(root, "name"); str(n) != s.name {
		im.problem(s.rel, n, "ensemble name %q is %q here", str(n), s.name)
	}
	c.out.Input = str(get(root, "default_task"))
	if c.out.Input == "" {
		c.out.Input = str(get(root, "task"))
	}
	keys, _ := pairs(root)
	for _, k := range keys {
		if !slices.Contains(topLevel, k.Value) {
			im.problem(s.rel, k, "%s: not converted (ensemble has no such field)", k.Value)
		}
	}
	agents := get(root, "agents").Content
	for _, a := range agents {
		llm := str(get(a, "name"))
		c.names[llm] = sanitize(llm)
	}
	// the deliverable: what a parent (ensemble, dispatch or loop agent)
	// receives of this ensemble
	c.out.Output = terminal(s)
	for _, a := range agents {
		c.agent(a)
	}
	c.ensembleFields()
	c.models()
	return c
}

// encode is the converted file.
func (c *conv) encode() ([]byte, error) {
	var buf bytes.Buffer
	fmt.Fprintf(&buf, "# Imported from llm-orc: %s (ensemble import llm-orc; docs/llm-orc.md)\n", c.src.rel)
	enc := yaml.NewEncoder(&buf)
	enc.SetIndent(2)
	if err := enc.Encode(c.out); err != nil {
		return nil, err
	}
	return buf.Bytes(), enc.Close()
}

// ensembleFields converts the ensemble's output_schema (onto its output
// agent, whose schema is the ensemble's) and max_concurrency.
func (c *conv) ensembleFields() {
	root := c.src.root
	if sch := get(root, "output_schema"); sch != nil {
		var target *outAgent
		for _, a := range c.out.Agents {
			if a.Name == c.out.Output {
				target = a
			}
		}
		m, ok := value(sch).(map[string]any)
		switch {
		case !ok:
			c.problem(sch, "output_schema: not converted (not a JSON Schema mapping)")
		case target == nil:
			c.problem(sch, "output_schema: not converted (the ensemble has no output agent)")
		case target.OutputSchema != nil:
			c.problem(sch, "output_schema: not converted (its output agent %q has one of its own)", target.Name)
		case target.Loop != nil || target.Dispatch != nil:
			c.problem(sch, "output_schema: not converted (its output agent %q is a loop or dispatch)", target.Name)
		default:
			target.OutputSchema = m
			target.OutputFormat = ""
		}
	}
	if mc := get(root, "max_concurrency"); mc != nil {
		if n, ok := value(mc).(int); ok && n > 0 {
			c.out.Limits = &outLimits{ParallelAgentLimit: n}
		} else {
			c.problem(mc, "max_concurrency %q: not converted (not a positive integer)", str(mc))
		}
	}
}

func (c *conv) problem(n *yaml.Node, format string, args ...any) {
	c.im.problem(c.src.rel, n, format, args...)
}

// ctx is the expression reading an agent's output in context.
func (c *conv) ctx(agent string, optional bool) string {
	return member("context", c.names[agent], optional)
}

func (c *conv) agent(n *yaml.Node) {
	name := str(get(n, "name"))
	out := &outAgent{Name: c.names[name]}
	if out.Name != name {
		c.problem(get(n, "name"), "agent %q is named %q (ensemble names are [a-z0-9_-]+)", name, out.Name)
	}
	keys, _ := pairs(n)
	for _, k := range keys {
		if !slices.Contains(agentKeys, k.Value) {
			c.problem(k, "agent %q: %s: not converted", name, k.Value)
		}
	}
	if t := get(n, "timeout_seconds"); t != nil {
		out.TimeoutSeconds = value(t)
	}
	deps, depNodes, first := c.dependsOn(name, n)
	inputKey := str(get(n, "input_key"))
	if inputKey != "" && first == "" {
		c.problem(get(n, "input_key"), "agent %q: input_key without depends_on: not converted", name)
		inputKey = ""
	}
	fanOut := value(get(n, "fan_out")) == true
	if fanOut {
		if first == "" {
			c.problem(get(n, "fan_out"), "agent %q: fan_out without depends_on: not converted", name)
			fanOut = false
		} else {
			over := c.ctx(first, false)
			if inputKey != "" {
				over = member(over, inputKey, false)
			}
			out.FanOut = &outFanOut{Over: over}
		}
	} else if inputKey != "" {
		deps[0].Select = member("output", inputKey, false)
	}
	if w := get(n, "when"); w != nil {
		c.when(name, w, out)
	}
	for _, d := range deps {
		if d.Condition == "" && d.Select == "" {
			out.Dependencies = append(out.Dependencies, d.AgentName)
		} else {
			out.Dependencies = append(out.Dependencies, d)
		}
	}
	switch {
	case get(n, "script") != nil:
		c.script(name, n, out)
		for i, d := range deps {
			if c.runsChild(d.AgentName) {
				c.problem(depNodes[i], "agent %q: its dependency %q is a child ensemble: its response is the child's deliverable (its output: agent's output), not llm-orc's {ensemble, status, results, deliverable}; a script reading [\"deliverable\"] must read the response itself", name, d.AgentName)
			}
		}
	case get(n, "loop") != nil:
		c.loop(name, n, out)
	case get(n, "dispatch") != nil:
		c.dispatch(name, n, out, first, inputKey)
	case get(n, "ensemble") != nil:
		child := sanitize(str(get(n, "ensemble")))
		if _, ok := c.im.byName[child]; !ok {
			c.problem(get(n, "ensemble"), "agent %q: ensemble %q: no such ensemble in the project", name, str(get(n, "ensemble")))
		}
		out.Ensemble = child + ".yaml"
		if fanOut {
			out.Input = "{{ item }}"
		}
	default:
		c.llm(name, n, out)
		if len(deps) > 0 && !fanOut {
			c.problem(get(n, "depends_on"), "agent %q: its input is the labelled text of its dependencies (Input from AGENT: ...), not llm-orc's wording of a dependent agent's prompt", name)
		}
	}
	if fanOut && out.Script == "" {
		c.problem(get(n, "fan_out"), "agent %q: fan_out: each instance gets its item alone as its input, without llm-orc's wrapping of a chunk", name)
	}
	if get(n, "script") != nil || get(n, "ensemble") != nil || get(n, "loop") != nil || get(n, "dispatch") != nil {
		for _, k := range []string{"options", "ollama_format"} {
			if v := get(n, k); v != nil {
				c.problem(v, "agent %q: %s: not converted (not an LLM agent)", name, k)
			}
		}
	}
	if out.Script == "" {
		if p := get(n, "parameters"); p != nil {
			c.problem(p, "agent %q: parameters: not converted (only script agents take them)", name)
		}
	}
	c.out.Agents = append(c.out.Agents, out)
}

// dependsOn converts an agent's depends_on (names, or {agent_name: ...}):
// its dependencies, their nodes, and the name of the first, as written.
func (c *conv) dependsOn(name string, n *yaml.Node) (deps []*outDep, depNodes []*yaml.Node, first string) {
	if d := get(n, "depends_on"); d != nil {
		for _, item := range d.Content {
			dn := str(item)
			if item.Kind == yaml.MappingNode {
				dn = str(get(item, "agent_name"))
				ks, _ := pairs(item)
				for _, k := range ks {
					if k.Value != "agent_name" {
						c.problem(k, "agent %q: depends_on %s: not converted", name, k.Value)
					}
				}
			}
			if _, ok := c.names[dn]; !ok {
				c.problem(item, "agent %q: depends_on %q: no such agent", name, dn)
				continue
			}
			deps = append(deps, &outDep{AgentName: c.names[dn]})
			depNodes = append(depNodes, item)
		}
	}
	if len(deps) > 0 {
		first = str(depNodes[0])
		if depNodes[0].Kind == yaml.MappingNode {
			first = str(get(depNodes[0], "agent_name"))
		}
	}
	return deps, depNodes, first
}

// when converts a guard `${agent.field}` or `${agent.field} == literal`
// into the agent's when: guard, which reads the agent's latest output as
// llm-orc's guard reads the results so far.
func (c *conv) when(name string, w *yaml.Node, out *outAgent) {
	cond, ok := predicate(str(w), func(tok string) (string, bool) {
		if m := refDepField.FindStringSubmatch(tok); m != nil && c.names[m[1]] != "" {
			return fieldPath(c.ctx(m[1], false), m[2]), true
		}
		// ${agent}: its whole output
		if m := refField.FindStringSubmatch(tok); m != nil && c.names[m[1]] != "" {
			return c.ctx(m[1], false), true
		}
		return "", false
	})
	if !ok {
		c.problem(w, "agent %q: when %q: not converted (only ${agent}, ${agent.field}, alone or == or != a literal, becomes a when: guard)", name, str(w))
		return
	}
	out.When = cond
}

func (c *conv) script(name string, n *yaml.Node, out *outAgent) {
	ref := str(get(n, "script"))
	clean := path.Clean(ref)
	if strings.ContainsAny(ref, " \n;|&") || path.IsAbs(clean) || strings.HasPrefix(clean, "..") {
		c.problem(get(n, "script"), "agent %q: script %q: not converted (only a script file of the project)", name, ref)
	} else if rel, abs := c.im.findScript(clean); rel != "" {
		c.im.scripts[rel] = true
		clean = rel
	} else if abs != "" {
		if _, seen := c.im.external[clean]; !seen {
			c.im.external[clean] = abs
			c.problem(get(n, "script"), "agent %q: script %q: llm-orc's primitive, copied from the installed llm-orc package: %s", name, ref, abs)
		}
	} else if c.im.leaves(clean) || c.im.leaves(path.Join("scripts", clean)) {
		// listed as the link it goes through
	} else if strings.HasPrefix(clean, "primitives/") {
		if c.im.missing == nil {
			c.im.missing = map[string]bool{}
		}
		if c.im.missing[clean] {
			// listed once
		} else {
			c.im.missing[clean] = true
			c.problem(get(n, "script"), "agent %q: script %q: llm-orc's primitive, not found: llm-orc is not installed where python3 imports it, or lacks it; install llm-orc, or give its package folder with --llm-orc-package DIR", name, ref)
		}
	} else {
		c.problem(get(n, "script"), "agent %q: script %q: not found under .llm-orc or .llm-orc/scripts", name, ref)
	}
	out.Script = clean
	out.Protocol = "llm-orc"
	if p := get(n, "parameters"); p != nil {
		if m, ok := value(p).(map[string]any); ok && len(m) > 0 {
			out.Parameters = m
		}
	}
	for _, k := range []string{"model_profile", "system_prompt", "fallback_model_profile"} {
		if v := get(n, k); v != nil {
			c.problem(v, "agent %q: %s: not converted (a script agent)", name, k)
		}
	}
}

// llm converts an LLM agent: its profile, or a profile derived from it for
// an inline model, temperature, max_tokens or fallback_model_profile.
func (c *conv) llm(name string, n *yaml.Node, out *outAgent) {
	out.Prompt = str(get(n, "system_prompt"))
	switch f := str(get(n, "output_format")); f {
	case "", "text":
	case "json":
		out.OutputFormat = "json"
	default:
		c.problem(get(n, "output_format"), "agent %q: output_format %q: not converted", name, f)
	}
	if f := get(n, "ollama_format"); f != nil {
		switch v := value(f).(type) {
		case string:
			if v == "json" {
				out.OutputFormat = "json"
			} else {
				c.problem(f, "agent %q: ollama_format %q: not converted", name, v)
			}
		case map[string]any:
			out.OutputFormat = ""
			out.OutputSchema = v
		default:
			c.problem(f, "agent %q: ollama_format: not converted (only json or a JSON Schema)", name)
		}
	}
	base := str(get(n, "model_profile"))
	var p *outProfile
	if base != "" {
		bp, ok := c.im.profiles[base]
		if !ok {
			c.problem(get(n, "model_profile"), "agent %q: model_profile %q: no such profile in config.yaml or profiles/", name, base)
			out.ModelProfile = sanitize(base)
			return
		}
		p = c.im.profileOf(bp)
		if p == nil {
			out.ModelProfile = sanitize(base)
			return
		}
	} else {
		at := get(n, "provider")
		if at == nil {
			at = get(n, "model")
		}
		p = c.im.convertProfile(c.src.rel, at, map[string]any{"provider": str(get(n, "provider")), "model": str(get(n, "model"))}, fmt.Sprintf("agent %q", name))
		if p == nil {
			return
		}
	}
	overrides := false
	if o := get(n, "options"); o != nil {
		if m, ok := value(o).(map[string]any); ok && len(m) > 0 {
			overrides = true
			cp := *p
			p = &cp
			c.im.applyOptions(c.src.rel, o, "agent \""+name+"\"", m, p)
		}
	}
	for _, k := range []string{"temperature", "max_tokens"} {
		if v := get(n, k); v != nil {
			overrides = true
			cp := *p
			p = &cp
			if k == "temperature" {
				p.Temperature = value(v)
			} else {
				p.MaxTokens = value(v)
			}
		}
	}
	if fb := str(get(n, "fallback_model_profile")); fb != "" {
		if _, ok := c.im.profiles[fb]; !ok {
			c.problem(get(n, "fallback_model_profile"), "agent %q: fallback_model_profile %q: no such profile", name, fb)
		} else {
			overrides = true
			cp := *p
			cp.Fallback = []string{sanitize(fb)}
			p = &cp
			c.use(fb)
		}
	}
	if base != "" && !overrides {
		out.ModelProfile = sanitize(base)
		c.use(base)
		return
	}
	// a profile of the agent's own
	out.ModelProfile = out.Name + "-model"
	c.derived[out.ModelProfile] = p
	for _, f := range p.Fallback {
		c.use(f)
	}
}

func (c *conv) loop(name string, n *yaml.Node, out *outAgent) {
	l := get(n, "loop")
	body := sanitize(str(get(l, "body")))
	child, ok := c.im.byName[body]
	if !ok {
		c.problem(get(l, "body"), "agent %q: loop body %q: no such ensemble in the project", name, str(get(l, "body")))
	} else if t := terminal(child); t != "" {
		out.Output = t
	}
	out.Ensemble = body + ".yaml"
	ref := func(tok string) (string, bool) {
		m := refField.FindStringSubmatch(tok)
		if m == nil {
			return "", false
		}
		return fieldPath("output", m[1]), true
	}
	until, ok := predicate(str(get(l, "until")), ref)
	if !ok {
		c.problem(get(l, "until"), "agent %q: loop until %q: not converted", name, str(get(l, "until")))
		until = "false"
	}
	out.Loop = &outLoop{Until: until, MaxIterations: value(get(l, "max_iterations")), OnExhausted: "succeed"}
	if cr := get(l, "carry"); cr != nil && cr.Tag != "!!null" {
		if e, ok := ref(str(cr)); ok {
			// a field that is null or absent carries nothing: the next
			// round gets the same input, never the text "null"
			out.Loop.Carry = e + " ?? input"
		} else {
			c.problem(cr, "agent %q: loop carry %q: not converted", name, str(cr))
		}
	}
	c.problem(l, "agent %q: loop: its output is the body's last agent's, not llm-orc's {output, iterations, terminated}", name)
}

func (c *conv) dispatch(name string, n *yaml.Node, out *outAgent, first, inputKey string) {
	d := get(n, "dispatch")
	m := refDepField.FindStringSubmatch(str(d))
	if m == nil || c.names[m[1]] == "" {
		c.problem(d, "agent %q: dispatch %q: not converted (only ${dep.field})", name, str(d))
		return
	}
	cases := map[string]string{}
	var skipped []string
	for en := range c.im.byName {
		if en == c.src.name {
			continue
		}
		if c.im.reachesDispatch(en) {
			skipped = append(skipped, en)
			continue
		}
		cases[en] = en + ".yaml"
	}
	out.Dispatch = &outDispatch{On: fieldPath(c.ctx(m[1], false), m[2]), Cases: cases}
	c.dispatchers = append(c.dispatchers, dispatchAt{agent: name, node: d, d: out.Dispatch})
	if len(skipped) > 0 {
		sort.Strings(skipped)
		c.problem(d, "agent %q: dispatch: ensembles that run a dispatch themselves are no cases (a case could include its parent): %s", name, strings.Join(skipped, ", "))
	}
	if inputKey != "" {
		out.Input = "{{ " + member(c.ctx(first, false), inputKey, false) + " }}"
	} else {
		out.Input = "{{ input }}"
	}
}

// runsChild: the converted agent named agent is an ensemble, loop or
// dispatch agent.
func (c *conv) runsChild(agent string) bool {
	for _, a := range get(c.src.root, "agents").Content {
		if c.names[str(get(a, "name"))] == agent {
			return get(a, "ensemble") != nil || get(a, "loop") != nil || get(a, "dispatch") != nil
		}
	}
	return false
}

// dispatchAt is a dispatch agent of a converted file, whose cases the
// import may narrow once the cases are written and validated.
type dispatchAt struct {
	agent string
	node  *yaml.Node
	d     *outDispatch
}

// reachesDispatch: the ensemble name, or one it runs through ensemble: or
// a loop body (at any depth), has a dispatch agent.
func (im *importer) reachesDispatch(name string) bool {
	seen := map[string]bool{}
	var walk func(string) bool
	walk = func(n string) bool {
		if seen[n] {
			return false
		}
		seen[n] = true
		s := im.byName[n]
		if s == nil {
			return false
		}
		for _, a := range get(s.root, "agents").Content {
			switch {
			case get(a, "dispatch") != nil:
				return true
			case get(a, "ensemble") != nil:
				if walk(sanitize(str(get(a, "ensemble")))) {
					return true
				}
			case get(a, "loop") != nil:
				if walk(sanitize(str(get(get(a, "loop"), "body")))) {
					return true
				}
			}
		}
		return false
	}
	return walk(name)
}

// terminal is the last agent of s that no other agent depends on: llm-orc's
// deliverable.
func terminal(s *source) string {
	agents := get(s.root, "agents").Content
	depended := map[string]bool{}
	for _, a := range agents {
		if d := get(a, "depends_on"); d != nil {
			for _, item := range d.Content {
				if item.Kind == yaml.MappingNode {
					depended[str(get(item, "agent_name"))] = true
				} else {
					depended[str(item)] = true
				}
			}
		}
	}
	for i := len(agents) - 1; i >= 0; i-- {
		if n := str(get(agents[i], "name")); !depended[n] {
			return sanitize(n)
		}
	}
	return ""
}

func (c *conv) use(name string) {
	if c.used[name] {
		return
	}
	c.used[name] = true
	if p, ok := c.im.profiles[name]; ok {
		if fb, ok := p.m["fallback_model_profile"].(string); ok {
			c.use(fb)
		}
	}
}

// models writes the profiles the agents use into the file.
func (c *conv) models() {
	for name := range c.used {
		if p := c.im.profileOf(c.im.profiles[name]); p != nil {
			if c.out.Models == nil {
				c.out.Models = map[string]*outProfile{}
			}
			c.out.Models[sanitize(name)] = p
		}
	}
	for name, p := range c.derived {
		if c.out.Models == nil {
			c.out.Models = map[string]*outProfile{}
		}
		c.out.Models[name] = p
	}
}
