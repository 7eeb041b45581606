package ensemble

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/ensemble-run/ensemble/internal/scc"
)

// Warnings are problems that do not stop a file from loading:
// `ensemble validate` prints them, and `validate --strict` counts them as
// errors (docs/format.md#warnings).
//
// Warned of: a max_cost no priced profile can reach, trigger: all that
// cannot work, and the stale-input trap of a join inside a loop: an
// agent with two or more required dependencies that run in the same cycle,
// and the default trigger (any). It runs as soon as one of them has a new
// output, and pairs that output with the others' previous ones. trigger: all
// waits for every one; an explicit trigger: any says the pairing is wanted.
func (d *decoder) warnings(e *Ensemble) []*Error {
	comp := components(e)
	loops := loopMembers(e, comp)
	var out []*Error
	warn := func(a *Agent, format string, args ...any) {
		w := &Error{File: d.file, Line: a.Pos.Line, Column: a.Pos.Column, Message: fmt.Sprintf(format, args...)}
		if w.Line >= 1 && w.Line <= len(d.lines) {
			w.Source = strings.TrimRight(d.lines[w.Line-1], "\r")
		}
		out = append(out, w)
	}
	for _, a := range e.Agents {
		if comp[a.Index] >= 0 && a.Conversation.MaxTurns <= 1 {
			warn(a, "agent %q is in a loop (%s) but runs only once: conversation.max_turns is %d, so the loop never goes round; give it conversation: {max_turns: N}",
				a.Name, loopOf(loops, comp, a), max(a.Conversation.MaxTurns, DefaultMaxTurns))
		}
		if a.TriggerAll {
			triggerAllWarnings(e, a, comp, warn)
			continue
		}
		if a.triggerSet {
			continue
		}
		byComp := map[int][]string{}
		var order []int
		for _, dep := range a.Dependencies {
			da := e.Agent(dep.AgentName)
			if !dep.RequiresAll || da == nil || comp[da.Index] < 0 {
				continue
			}
			c := comp[da.Index]
			if len(byComp[c]) == 0 {
				order = append(order, c)
			}
			if !slices.Contains(byComp[c], dep.AgentName) {
				byComp[c] = append(byComp[c], dep.AgentName)
			}
		}
		for _, c := range order {
			names := byComp[c]
			if len(names) < 2 {
				continue
			}
			// Required dependencies outside this loop must be fresh too
			// under trigger: all: say so, or the advice would stall the join.
			var outside []string
			for _, dep := range a.Dependencies {
				if da := e.Agent(dep.AgentName); dep.RequiresAll && da != nil && comp[da.Index] != c && !slices.Contains(outside, dep.AgentName) {
					outside = append(outside, dep.AgentName)
				}
			}
			advice := "add trigger: all to wait for all of them"
			if len(outside) > 0 {
				advice += fmt.Sprintf(" (trigger: all waits for a new output from every required dependency: make %s optional with requires_all: false if it does not run every round)", enumerate(quote(outside)))
			}
			warn(a, "agent %q joins %s, which run in the same loop: it runs as soon as one of them has a new output, "+
				"paired with the others' previous ones; %s; trigger: any keeps this and silences the warning",
				a.Name, enumerate(quote(names)), advice)
		}
	}
	return slices.Concat(d.shadowed, out, d.unpricedCostWarnings(e), d.clearKeyWarnings(e))
}

// warningAt is a warning of the file at p.
func (d *decoder) warningAt(p Pos, msg string) *Error {
	w := &Error{File: d.file, Line: p.Line, Column: p.Column, Message: msg}
	if w.Line >= 1 && w.Line <= len(d.lines) {
		w.Source = strings.TrimRight(d.lines[w.Line-1], "\r")
	}
	return w
}

// unpricedCostWarnings warn of a max_cost that can never be reached: cost
// comes from the profiles' pricing, and a profile without one costs 0
// (docs/semantics.md#budgets), so a cap with no priced profile anywhere
// (the file's and the profiles files') protects nothing.
func (d *decoder) unpricedCostWarnings(e *Ensemble) []*Error {
	for _, m := range e.Models {
		if m != nil && m.Pricing != nil {
			return nil
		}
	}
	const why = "but no model profile has pricing: requests cost 0, so the cap is never reached; give the profiles pricing: {input_per_million, output_per_million}"
	var out []*Error
	at := func(line, col int, msg string) {
		w := &Error{File: d.file, Line: line, Column: col, Message: msg}
		if line >= 1 && line <= len(d.lines) {
			w.Source = strings.TrimRight(d.lines[line-1], "\r")
		}
		out = append(out, w)
	}
	if b := e.Limits.Budget; b != nil && b.MaxCost > 0 {
		at(d.maxCost.Line, d.maxCost.Column, "conversation_limits sets max_cost "+why)
	}
	for _, a := range e.Agents {
		if a.Budget != nil && a.Budget.MaxCost > 0 {
			at(a.Pos.Line, a.Pos.Column, fmt.Sprintf("agent %q has a budget with max_cost %s", a.Name, why))
		}
	}
	return out
}

// loopNames is how many of the other agents of a loop a warning names: a
// warning per agent of a long loop, each naming the whole loop, would grow
// as the square of the loop's length.
const loopNames = 5

// loopMembers lists the agents of each loop (component of comp), in file
// order: loops[c] are those of component c.
func loopMembers(e *Ensemble, comp []int) [][]*Agent {
	var loops [][]*Agent
	for _, a := range e.Agents {
		c := comp[a.Index]
		if c < 0 {
			continue
		}
		for len(loops) <= c {
			loops = append(loops, nil)
		}
		loops[c] = append(loops[c], a)
	}
	return loops
}

// loopOf names the other agents of a's loop (its component): at most
// loopNames of them, then how many more.
func loopOf(loops [][]*Agent, comp []int, a *Agent) string {
	members := loops[comp[a.Index]]
	others := len(members) - 1 // a self-dependency is an error, never a loop
	var names []string
	for _, b := range members {
		if len(names) == loopNames-1 && others > loopNames {
			break
		}
		if b != a {
			names = append(names, b.Name)
		}
	}
	if others > loopNames {
		return fmt.Sprintf("with %s and %d other agents", strings.Join(quote(names), ", "), others-len(names))
	}
	return "with " + enumerate(quote(names))
}

func quote(names []string) []string {
	out := make([]string, len(names))
	for i, n := range names {
		out[i] = strconv.Quote(n)
	}
	return out
}

// triggerAllWarnings are the ways trigger: all goes wrong: on an agent with
// no required dependency it does nothing; with a required dependency that
// runs at most once beside one in a loop, the agent runs at most once.
func triggerAllWarnings(e *Ensemble, a *Agent, comp []int, warn func(*Agent, string, ...any)) {
	var inLoop, once []string
	required := 0
	for _, dep := range a.Dependencies {
		da := e.Agent(dep.AgentName)
		if !dep.RequiresAll || da == nil {
			continue
		}
		required++
		switch {
		case comp[da.Index] >= 0:
			inLoop = append(inLoop, dep.AgentName)
		case da.Conversation.MaxTurns <= 1 && !da.Conversation.TriggersConversation:
			once = append(once, dep.AgentName)
		}
	}
	switch {
	case required == 0:
		warn(a, "agent %q has trigger: all but no required dependency: it has no effect", a.Name)
	case len(inLoop) > 0 && len(once) > 0:
		warn(a, "agent %q has trigger: all and requires %s, which runs at most once: %q waits for a new output from it that never comes after its first execution; make it optional (requires_all: false)",
			a.Name, enumerate(quote(once)), a.Name)
	}
}

// components numbers the strongly connected components of the dependency
// graph that hold a cycle (two agents or more, or an agent depending on
// itself): comp[i] is the component of agent i, -1 when it is in no cycle.
func components(e *Ensemble) []int {
	n := len(e.Agents)
	// succ[i]: the agents that depend on agent i (edges dependency → agent).
	succ := make([][]int, n)
	self := make([]bool, n)
	for i, a := range e.Agents {
		for _, dep := range a.Dependencies {
			if da := e.Agent(dep.AgentName); da != nil {
				succ[da.Index] = append(succ[da.Index], i)
				if da.Index == i {
					self[i] = true
				}
			}
		}
	}
	return scc.Cyclic(succ, self)
}
