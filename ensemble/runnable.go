package ensemble

import (
	"fmt"
	"strings"
)

// Unrunnable returns, in file order, the agents that can never run (SPEC
// §1.2), with every condition assumed true: an agent can run when it has no
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
	return c.names[dep.AgentName] || (c.check != nil && !c.check(dep))
}

// runnable is the least fixed point of the rule of Unrunnable. check, when
// not nil, selects the dependencies that take part: the others are taken as
// able to run (the loader leaves out those it has already reported).
func (e *Ensemble) runnable(check func(*Dependency) bool) *canRun {
	c := &canRun{agents: map[*Agent]bool{}, names: map[string]bool{}, check: check}
	for changed := true; changed; {
		changed = false
		for _, a := range e.Agents {
			if !c.agents[a] && e.blocker(a, c) == nil {
				c.agents[a], c.names[a.Name] = true, true
				changed = true
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

// whyUnrunnable explains why a can never run by following its blocking
// dependencies, which end in a cycle with no entry from outside.
func (e *Ensemble) whyUnrunnable(a *Agent, c *canRun) string {
	path := []*Agent{a}
	at := map[*Agent]int{a: 0}
	for {
		dep := e.blocker(path[len(path)-1], c)
		next := e.Agent(dep.AgentName)
		if next == nil {
			return fmt.Sprintf("it waits for unknown agent %q", dep.AgentName)
		}
		if i, seen := at[next]; seen {
			var cycle []string
			for _, b := range append(path[i:], next) {
				cycle = append(cycle, b.Name)
			}
			msg := "a cycle with no entry from outside: " + strings.Join(cycle, " → ")
			if i == 0 {
				return "it is in " + msg
			}
			return fmt.Sprintf("it depends on %q, which can never run (%s)", path[1].Name, msg)
		}
		at[next] = len(path)
		path = append(path, next)
	}
}
