package engine

import (
	"fmt"
	"strings"

	"github.com/ensemble-run/ensemble/agent"
	"github.com/ensemble-run/ensemble/ensemble"
	"github.com/ensemble-run/ensemble/internal/conditions"
	"github.com/ensemble-run/ensemble/internal/opaque"
	"github.com/ensemble-run/ensemble/state"
)

// Reads of missing keys (docs/semantics.md#reads-of-missing-keys): the
// evaluations of a turn (the resolver's conditions and guards, the
// planner's selects, templates and fan-out lists, a loop's until and carry
// in its execution) note the keys they read that their values do not
// have; the committer records each as a warning, once per agent,
// expression and path in a run. With Options.Strict, a run whose turn
// recorded one ends after that turn, strict_warning.

// StrictWarning is the completion reason of a run that --strict ended on a
// warning (docs/semantics.md#end-of-a-run-and-exit-codes).
const StrictWarning = "strict_warning"

// missWarning is the warning of a read of a missing key by what (`when of
// security`, `input of reviewer`) of agent name, through the edge from dep
// ("" when it is not an edge's). placeholder: the expression is a
// template's, shown in its braces.
func missWarning(name, what, dep string, m conditions.Miss, placeholder bool) state.Warning {
	m.Suggest()
	msg := what
	switch {
	case placeholder:
		msg += fmt.Sprintf(" ({{ %s }})", m.Expression)
	case m.Expression != m.Path:
		msg += fmt.Sprintf(" (%s)", m.Expression)
	}
	msg += fmt.Sprintf(" reads %s, a key its value does not have", m.Path)
	if m.Suggestion != "" {
		msg += fmt.Sprintf(" (did you mean `%s`?)", m.Suggestion)
	}
	msg += ": it counted as null"
	return state.Warning{AgentName: name, Dependency: dep, Expression: m.Expression, Kind: state.WarnMissingRead,
		Path: m.Path, Suggestion: m.Suggestion, Message: msg}
}

// missKey is the key (warningKey) of the warning of a read of a missing
// key: known before its message, whose suggestion costs a search.
func missKey(name, dep string, m *conditions.Miss) string {
	return warningKey(state.Warning{Kind: state.WarnMissingRead, AgentName: name, Dependency: dep, Expression: m.Expression, Path: m.Path})
}

// readNotes are the warnings the planner's evaluations noted in a turn,
// each once, and none the run has (known: the committer's); the committer
// records them.
type readNotes struct {
	reads    conditions.Reads // where the evaluations note their misses
	warnings []state.Warning
	seen     map[string]bool
	known    map[string]bool
}

// env is e noting its reads in n.
func (n *readNotes) env(e *conditions.Env) *conditions.Env {
	e.Reads = &n.reads
	return e
}

// take turns the misses noted since the last take into warnings of what
// of agent name.
func (n *readNotes) take(name, what, dep string, placeholder bool) {
	for _, m := range n.reads.Take() {
		if k := missKey(name, dep, &m); !n.known[k] && !n.seen[k] {
			n.add(missWarning(name, what, dep, m, placeholder))
		}
	}
}

func (n *readNotes) add(w state.Warning) {
	k := warningKey(w)
	if n.seen[k] || n.known[k] {
		return
	}
	if n.seen == nil {
		n.seen = map[string]bool{}
	}
	n.seen[k] = true
	n.warnings = append(n.warnings, w)
}

// nullMessage notes the template t of a when it gave v: null as the whole
// message of an agent that reaches a model (its input or prompt), which
// the model would receive as the text "null".
func (n *readNotes) nullMessage(a *ensemble.Agent, t *ensemble.Template, v any) {
	if v != nil || !opaque.Get(t.Program).Whole() || (t.Field != "input" && t.Field != "prompt") || !agent.IsGuarded(a.Kind) {
		return
	}
	expr := strings.TrimSpace(strings.TrimSuffix(strings.TrimPrefix(strings.TrimSpace(t.Source), "{{"), "}}"))
	w := state.Warning{AgentName: a.Name, Expression: expr, Kind: state.WarnNullMessage}
	if k := warningKey(w); n.seen[k] || n.known[k] {
		return // a fan-out's every instance: the message is written once
	}
	w.Message = fmt.Sprintf("%s of %s ({{ %s }}) is null: the model is sent the text \"null\"", t.Field, a.Name, expr)
	n.add(w)
}

// recordMisses records the reads of missing keys that an execution of
// agent name noted (a loop's until and carry: agent.Result.Misses), and
// those of the child runs it made (agent.Result.Warnings).
func (c *committer) recordMisses(turn int, name string, res *agent.Result) {
	if res == nil {
		return
	}
	for _, m := range res.Misses {
		miss := conditions.Miss{Expression: m.Expression, Path: m.Path, Key: m.Key}
		if !c.seenWarning[missKey(name, "", &miss)] {
			if m.Suggest != nil {
				miss.Suggestion = m.Suggest()
			}
			c.record(turn, missWarning(name, m.What+" of "+name, "", miss, false))
		}
	}
	for _, w := range res.Warnings {
		c.record(turn, w) // a child run's: its message names its agent
	}
}
