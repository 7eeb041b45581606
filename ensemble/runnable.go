package ensemble

import (
	"fmt"
	"strings"
)

// Unrunnable returns, in file order, the agents that can never run (
// docs/format.md#validation), with every condition assumed true: an agent can run when it has no
// dependencies, or when all its required dependencies can run and it has a
// required dependency or an optional one that can run. A dependency on an
// unknown agent never runs.
func (e *Ensemble) Unrunnable() []string {
	c := e.runnable(nil)
	var names []string
	for _, a := range e.Agents {
		if !c.agents[a] {
			names = append(names, a.Name)
		}
	}
	return names
}

// canRun is the outcome of the run check.
type canRun struct {
	agents map[*Agent]bool
	names  map[string]bool // some agent of that name can run (names repeat only in a file being reported)
	check  func(*Dependency) bool
}

// runs reports whether dep can deliver: its agent can run, or dep is left
// out of the check.
func (c *canRun) runs(dep *Dependency) bool {
	return c.names[dep.AgentName] || c.excluded(dep)
}

func (c *canRun) excluded(dep *Dependency) bool { return c.check != nil && !c.check(dep) }

// runnable is the least fixed point of the rule of Unrunnable, found in time
// linear in the number of dependencies: each agent counts the required
// dependencies it still waits for and the optional ones that can run, and a
// name that turns out to run updates the counts of its dependents once.
// check, when not nil, selects the dependencies that take part: the others
// are taken as able to run (the loader leaves out those it has already
// reported).
func (e *Ensemble) runnable(check func(*Dependency) bool) *canRun {
	c := &canRun{agents: map[*Agent]bool{}, names: map[string]bool{}, check: check}
	type edge struct {
		from *Agent
		dep  *Dependency
	}
	dependents := map[string][]edge{}
	waiting := make(map[*Agent]int, len(e.Agents)) // required dependencies that cannot run yet
	fed := make(map[*Agent]bool, len(e.Agents))    // no dependencies, a required one, or an optional one that can run
	var ready []*Agent
	for _, a := range e.Agents {
		fed[a] = len(a.Dependencies) == 0
		for _, dep := range a.Dependencies {
			switch {
			case c.excluded(dep):
				fed[a] = true
			case dep.RequiresAll:
				fed[a] = true
				waiting[a]++
				dependents[dep.AgentName] = append(dependents[dep.AgentName], edge{a, dep})
			default:
				dependents[dep.AgentName] = append(dependents[dep.AgentName], edge{a, dep})
			}
		}
		if fed[a] && waiting[a] == 0 {
			c.agents[a] = true
			ready = append(ready, a)
		}
	}
	for len(ready) > 0 {
		a := ready[len(ready)-1]
		ready = ready[:len(ready)-1]
		if c.names[a.Name] {
			continue
		}
		c.names[a.Name] = true
		for _, ed := range dependents[a.Name] {
			b := ed.from
			if ed.dep.RequiresAll {
				waiting[b]--
			} else {
				fed[b] = true
			}
			if !c.agents[b] && fed[b] && waiting[b] == 0 {
				c.agents[b] = true
				ready = append(ready, b)
			}
		}
	}
	return c
}

// blocker returns a dependency that keeps a from running given the agents
// known to run: a required one that cannot run or, when a has only optional
// dependencies and none can run, the first. It returns nil when a can run.
func (e *Ensemble) blocker(a *Agent, c *canRun) *Dependency {
	var optional *Dependency
	ok := false // a has a required dependency, or an optional one that can run
	for _, dep := range a.Dependencies {
		runs := c.runs(dep)
		switch {
		case dep.RequiresAll && !runs:
			return dep
		case dep.RequiresAll || runs:
			ok = true
		case optional == nil:
			optional = dep
		}
	}
	if ok {
		return nil
	}
	return optional
}

// unrunnable is an agent that can never run, and why.
type unrunnable struct {
	agent *Agent
	why   string
}

// whyUnrunnable explains, in file order, why agents can never run. Following
// each one's blocking dependency leads to an unknown agent or into a cycle
// with no entry from outside. A cycle is explained once, at its first agent in
// the file, with its path (shortened when long); the other agents of the
// cycle are not reported again, and the agents that wait for it name it by
// that agent. The work is linear in the number of agents and dependencies.
func (e *Ensemble) whyUnrunnable(c *canRun) []unrunnable {
	next := map[*Agent]*Agent{}    // the agent a blocking dependency waits for
	unknown := map[*Agent]string{} // or the unknown agent it names
	for _, a := range e.Agents {
		if !c.agents[a] {
			dep := e.blocker(a, c)
			if b := e.Agent(dep.AgentName); b != nil {
				next[a] = b
			} else {
				unknown[a] = dep.AgentName
			}
		}
	}
	// Walk each chain once: root is the first agent of the cycle a chain
	// ends in, nil when it ends at an unknown agent.
	const (
		onPath = 1
		done   = 2
	)
	state := map[*Agent]int{}
	root := map[*Agent]*Agent{}
	rootUnknown := map[*Agent]string{}
	cycles := map[*Agent][]*Agent{} // by first agent, in order from it
	cyclic := map[*Agent]bool{}
	for _, start := range e.Agents {
		if c.agents[start] || state[start] != 0 {
			continue
		}
		var path []*Agent
		at := map[*Agent]int{}
		cur := start
		for cur != nil && state[cur] == 0 {
			state[cur], at[cur] = onPath, len(path)
			path = append(path, cur)
			cur = next[cur]
		}
		end := len(path)
		if cur != nil && state[cur] == onPath { // a new cycle: path[at[cur]:]
			cycle := path[at[cur]:]
			first := 0
			for i, b := range cycle {
				if b.Index < cycle[first].Index {
					first = i
				}
			}
			cycle = append(cycle[first:len(cycle):len(cycle)], cycle[:first]...)
			cycles[cycle[0]] = cycle
			for _, b := range cycle {
				root[b], state[b], cyclic[b] = cycle[0], done, true
			}
			end = at[cur]
		}
		for i := end - 1; i >= 0; i-- {
			b := path[i]
			if n := next[b]; n != nil {
				root[b], rootUnknown[b] = root[n], rootUnknown[n]
			} else {
				rootUnknown[b] = unknown[b]
			}
			state[b] = done
		}
	}
	var out []unrunnable
	for _, a := range e.Agents {
		if c.agents[a] {
			continue
		}
		r, n := root[a], next[a]
		var why string
		switch {
		case cycles[a] != nil:
			why = "it is in a cycle with no entry from outside: " + cyclePath(cycles[a])
		case cyclic[a]:
			continue // reported at r
		case cyclic[n]:
			why = fmt.Sprintf("it depends on %q, which is in the cycle with no entry from outside reported on line %d", n.Name, r.Pos.Line)
		case r != nil:
			why = fmt.Sprintf("it depends on %q, which can never run because of the cycle with no entry from outside reported on line %d", n.Name, r.Pos.Line)
		default:
			why = fmt.Sprintf("it waits for unknown agent %q", rootUnknown[a])
		}
		out = append(out, unrunnable{a, why})
	}
	return out
}

// cyclePath writes a cycle as a → b → a; a long one shows its first three and
// last two agents and its length.
func cyclePath(cycle []*Agent) string {
	names := make([]string, 0, 7)
	if len(cycle) <= 6 {
		for _, a := range cycle {
			names = append(names, a.Name)
		}
		return strings.Join(append(names, cycle[0].Name), " → ")
	}
	for _, a := range cycle[:3] {
		names = append(names, a.Name)
	}
	names = append(names, "…", cycle[len(cycle)-2].Name, cycle[len(cycle)-1].Name, cycle[0].Name)
	return fmt.Sprintf("%s (%d agents)", strings.Join(names, " → "), len(cycle))
}
