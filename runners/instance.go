package runners

import (
	"fmt"

	"github.com/ensemble-run/ensemble/ensemble"
)

// injectedEntry is the injected entry an execution takes its response from,
// and the 1-based number of that response. An instance's own entry
// (`agent[i]`) comes first, and takes the response of the agent's
// execution; otherwise the agent's entry gives its instances their
// responses in order, across instances and executions (Instance.Seq).
func (ir *InjectedRunner) injectedEntry(req *Request) (*ResponseEntry, int) {
	if in := req.Instance; in != nil {
		if ent := ir.Responses.Entry(in.Name); ent != nil {
			return ent, max(req.Execution, 1)
		}
		return ir.Responses.Entry(req.Agent.Name), max(in.Seq, 1)
	}
	return ir.Responses.Entry(req.Agent.Name), max(req.Execution, 1)
}

// validInstance reports whether name is an instance name `agent[i]` of an
// agent of e with a fan_out, which injected responses may target.
func validInstance(e *ensemble.Ensemble, name string) bool {
	agent, _, ok := ensemble.ParseInstanceName(name)
	if !ok {
		return false
	}
	a := e.Agent(agent)
	return a != nil && a.FanOut != nil
}

// notAnInstance explains why name, written as an instance `agent[i]`,
// names none: its agent has no fan_out. "" when name is not of that form or
// names no agent.
func notAnInstance(e *ensemble.Ensemble, name string) string {
	agent, _, ok := ensemble.ParseInstanceName(name)
	if !ok || e.Agent(agent) == nil {
		return ""
	}
	return fmt.Sprintf("%q in responses names an instance, but agent %q has no fan_out: its responses go under %q", name, agent, agent)
}

// exhausted is the error of an execution whose injected responses ran out:
// entry ent had no response n.
func exhausted(req *Request, ent *ResponseEntry, n int) error {
	a, have := req.Agent.Name, len(ent.Values)
	if in := req.Instance; in != nil {
		if ent.Agent == in.Name {
			return fmt.Errorf("agent %q: injected responses exhausted after %d (execution %d has none)", in.Name, have, n)
		}
		return fmt.Errorf("agent %q: injected responses exhausted after %d (%s, its instance %d in the run, has none)", a, have, in.Name, n)
	}
	return fmt.Errorf("agent %q: injected responses exhausted after %d (execution %d has none)", a, have, n)
}
