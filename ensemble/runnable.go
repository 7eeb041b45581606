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
	can := e.runnable()
	var names []string
	for _, a := range e.Agents {
		if !can[a] {
			names = append(names, a.Name)
		}
	}
	return names
}

// runnable is the least fixed point of the rule of Unrunnable.
func (e *Ensemble) runnable() map[*Agent]bool {
	can := map[*Agent]bool{}
	for changed := true; changed; {
		changed = false
		for _, a := range e.Agents {
			if !can[a] && e.blocker(a, can) == nil {
				can[a] = true
				changed = true
			}
		}
	}
	return can
}

// blocker returns a dependency that keeps a from running given the agents
// known to run: a required one that cannot run or, when a has only optional
// dependencies and none can run, the first. It returns nil when a can run.
func (e *Ensemble) blocker(a *Agent, can map[*Agent]bool) *Dependency {
	var optional *Dependency
	ok := false // a has a required dependency, or an optional one that can run
	for _, dep := range a.Dependencies {
		runs := can[e.Agent(dep.AgentName)]
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
func (e *Ensemble) whyUnrunnable(a *Agent, can map[*Agent]bool) string {
	path := []*Agent{a}
	at := map[*Agent]int{a: 0}
	for {
		dep := e.blocker(path[len(path)-1], can)
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
