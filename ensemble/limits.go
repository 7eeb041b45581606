package ensemble

import (
	"cmp"
	"maps"
	"slices"
)

var limitKeys = []string{"max_total_turns", "max_agent_executions", "timeout_seconds", "parallel_agent_limit", "max_tokens", "max_requests", "max_cost"}

// limits decodes conversation_limits (docs/semantics.md#limits), with its defaults.
func (d *decoder) limits(f field) Limits {
	l := Limits{MaxTotalTurns: DefaultMaxTotalTurns, Timeout: DefaultTimeout, ParallelAgentLimit: DefaultParallelAgentLimit}
	if !f.ok() {
		return l
	}
	m := d.mapping(f.val, f.nested(), limitKeys...)
	if m == nil {
		return l
	}
	l.MaxTotalTurns = cmp.Or(d.positive(m.get("max_total_turns")), l.MaxTotalTurns)
	l.Timeout = cmp.Or(d.seconds(m.get("timeout_seconds")), l.Timeout)
	l.ParallelAgentLimit = cmp.Or(d.positive(m.get("parallel_agent_limit")), l.ParallelAgentLimit)
	l.Budget = d.budgetFields(m)
	if fc := m.get("max_cost"); fc.ok() {
		d.maxCost = pos(fc.key)
	}
	if f := m.get("max_agent_executions"); f.ok() {
		per := d.mapping(f.val, f.nested())
		l.MaxAgentExecutions = make(map[string]int, len(per.all()))
		for name, pf := range per.all() {
			if d.agentNodes[name] == nil {
				d.errorf(pf.key, "%s: unknown agent %q%s", f.nested(), name, suggest(name, slices.Sorted(maps.Keys(d.agentNodes))))
			}
			l.MaxAgentExecutions[name] = d.positive(pf)
		}
	}
	return l
}
