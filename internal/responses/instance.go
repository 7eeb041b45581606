package responses

import (
	"fmt"
	"strings"

	"github.com/ensemble-run/ensemble/agent"
	"github.com/ensemble-run/ensemble/agentpath"
	"github.com/ensemble-run/ensemble/ensemble"
	"github.com/ensemble-run/ensemble/state"
)

// injectedEntry is the injected entry an execution takes its response from,
// and the 1-based number of that response. An instance's own entry
// (`agent[i]`) comes first, and takes the response of the agent's
// execution; otherwise the agent's entry gives its instances their
// responses in order, across instances and executions (agent.Instance.Seq).
func (ir *InjectedRunner) injectedEntry(req *agent.Request) (*ResponseEntry, int, error) {
	if req.Path != "" {
		return ir.pathEntry(req)
	}
	if in := req.Instance; in != nil {
		if ent := ir.Responses.Entry(in.Name); ent != nil {
			return ent, max(req.Execution, 1), nil
		}
		return ir.Responses.Entry(req.Agent.Name), max(in.Seq, 1), nil
	}
	return ir.Responses.Entry(req.Agent.Name), max(req.Execution, 1), nil
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
	if strings.Contains(name, "/") {
		// A path through an instance of an agent without fan_out.
		generic := agentpath.PathWithoutInstances(name)
		if generic == name || agentpath.AgentAt(e, generic) == nil {
			return ""
		}
		i := strings.LastIndex(name, "/") + 1
		if last, _, ok := ensemble.ParseInstanceName(name[i:]); ok {
			if a := agentpath.AgentAt(e, name[:i]+last); a != nil && a.FanOut != nil {
				return fmt.Sprintf("%q in responses names an instance of a fan-out in a child ensemble, which takes its responses from its agent's list, in item order: write them under %q",
					name, name[:i]+last)
			}
		}
		return fmt.Sprintf("%q in responses names an instance, but the agent above has no fan_out: its responses go under %q", name, generic)
	}
	agent, _, ok := ensemble.ParseInstanceName(name)
	if !ok || e.Agent(agent) == nil {
		return ""
	}
	return fmt.Sprintf("%q in responses names an instance, but agent %q has no fan_out: its responses go under %q", name, agent, agent)
}

// exhausted is the error of an execution whose injected responses ran out:
// entry ent had no response n.
func exhausted(req *agent.Request, ent *ResponseEntry, n int) error {
	a, have := req.Agent.Name, len(ent.Values)
	if req.Path != "" {
		return fmt.Errorf("agent %q: injected responses exhausted after %d (its execution %d in the run has none)", req.Path, have, n)
	}
	if in := req.Instance; in != nil {
		if ent.Agent == in.Name {
			return fmt.Errorf("agent %q: injected responses exhausted after %d (execution %d has none)", in.Name, have, n)
		}
		return fmt.Errorf("agent %q: injected responses exhausted after %d (%s, its instance %d in the run, has none)", a, have, in.Name, n)
	}
	return fmt.Errorf("agent %q: injected responses exhausted after %d (execution %d has none)", a, have, n)
}

// pathEntry is the entry of an agent of a child ensemble, named by its path
// (`review_round/critic`, `analyst[1]/think` below a fan-out's instance),
// and the number of the response it takes: its responses are taken in
// order across every execution of the child in this run
// (docs/testing.md#the-responses-file). nil when it has no entry.
//
// An instance of a fan-out in the child (`inner/summarize[2]`) takes its
// response from its agent's entry (`inner/summarize`) by its place in
// item order, never by the order the instances ask in: the responses
// earlier runs of the child took (counted when the first of this run's
// instances asks: the runs of one child at one path follow one another),
// plus the instance's Seq in this run of the child.
//
// Below a fan-out's instance, an entry without the instance
// (`analyst/think`) is shared by every instance's child, in item order:
// the instance numbered seq among the fan-out agent's instances in the
// run (agent.Request.PathSeq) takes response seq, whatever order the
// instances run in. It answers one execution per instance: an agent that
// runs again in the same instance's child, or a fan-out of more than one
// instance there, needs the instance's own entry.
func (ir *InjectedRunner) pathEntry(req *agent.Request) (*ResponseEntry, int, error) {
	path, seq, in := req.Path, req.PathSeq, req.Instance
	own := path // the entry of the agent below this one instance above
	if in != nil {
		i := strings.LastIndex(path, "/") + 1
		if name, _, ok := ensemble.ParseInstanceName(path[i:]); ok {
			own = path[:i] + name
		}
	}
	key := own
	ent := ir.Responses.Entry(key)
	shared := false
	if ent == nil {
		if key = agentpath.PathWithoutInstances(own); key != own {
			ent, shared = ir.Responses.Entry(key), seq > 0
		}
	}
	if ent == nil {
		return nil, 0, nil
	}
	ir.mu.Lock()
	defer ir.mu.Unlock()
	if ir.taken == nil {
		ir.taken = map[string]int{}
	}
	if shared {
		if in != nil && in.Seq > 1 {
			return ent, seq, fmt.Errorf("agent %q: %q answers each instance's child once, in item order, and %q has more than one instance there: "+
				"give this instance's executions their own list, under %q", path, key, req.Agent.Name, own)
		}
		// Counted by instance, to refuse a second execution in one
		// instance's child: it would take the next instance's response.
		k := fmt.Sprintf("%s#%d", key, seq)
		ir.taken[k]++
		if ir.taken[k] > 1 {
			return ent, seq, fmt.Errorf("agent %q ran again in its instance's child, but %q answers each instance once, in item order: "+
				"give this instance's executions their own list, under %q", path, key, own)
		}
		return ent, seq, nil
	}
	if in == nil {
		ir.taken[key]++
		return ent, ir.taken[key], nil
	}
	base := 0
	if req.ChildRun != nil {
		base = req.ChildRun.Once(key, func() int { return ir.taken[key] })
	}
	n := base + max(in.Seq, 1)
	ir.taken[key] = max(ir.taken[key], n)
	return ent, n, nil
}

// Resume counts, for a run resumed from a state, the executions of child
// ensembles' agents its completed turns recorded (history: the state's), so
// that their responses by path go on where they were.
func (ir *InjectedRunner) Resume(history []*state.Record) {
	ir.mu.Lock()
	defer ir.mu.Unlock()
	if ir.taken == nil {
		ir.taken = map[string]int{}
	}
	var walk func(recs []*state.Record, prefix string)
	walk = func(recs []*state.Record, prefix string) {
		for _, r := range recs {
			switch {
			case prefix == "" || isFanOutRecord(r):
			case r.Of != "":
				// An instance: counted under its agent, as pathEntry
				// counts it (its Seq in the child's run follows the
				// records of the agent's instances).
				ir.taken[prefix+r.Of]++
			default:
				ir.taken[prefix+r.AgentName]++
			}
			if c := r.Child(); c != nil {
				for _, run := range c.Runs() {
					walk(run.ConversationHistory, prefix+r.AgentName+"/")
				}
			}
		}
	}
	walk(history, "")
}

// isFanOutRecord reports whether r is a fan-out agent's own record, made of
// its instances' (which ran) rather than of a run of its own.
func isFanOutRecord(r *state.Record) bool {
	m, ok := r.InputData.(map[string]any)
	_, fan := m["fan_out"]
	return ok && fan
}

// validPath reports whether name is the path of an agent of a child
// ensemble (`review_round/critic`, as deep as they nest).
func validPath(e *ensemble.Ensemble, name string) bool {
	return strings.Contains(name, "/") && agentpath.AgentAt(e, name) != nil
}
