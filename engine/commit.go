package engine

import (
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"time"

	"github.com/ensemble-run/ensemble/ensemble"
	"github.com/ensemble-run/ensemble/events"
	"github.com/ensemble-run/ensemble/internal/resolver"
	"github.com/ensemble-run/ensemble/internal/secrets"
	"github.com/ensemble-run/ensemble/state"
)

// committer is the one writer of a run's state: it folds the executions of
// a finished turn back into the state, agent by agent (counts, context,
// edges, requests, memory, history), and records the warnings of the
// conditions that failed while the turn was resolved. Everything else in a
// run (the resolver, the planner, the executor, the result) only reads the
// state.
type committer struct {
	ens    *ensemble.Ensemble
	st     *state.State
	events *events.Sink // the run's sink, which Run.Events may swap
	// secrets are redacted from the warnings: a condition's error may
	// quote a key that it put back together from outputs that each hold
	// a part of it.
	secrets *secrets.Redactor

	seenWarning map[string]bool
	// strict is set once a warning --strict ends a run on is recorded
	// (state.Warning.Strict).
	strict bool
	// lastOutput is, per state key, the execution whose output it holds
	// when that output is long: what a record's input_data refers to
	// instead of copying the output.
	lastOutput map[string]state.OutputRef
	// instances counts, per fan-out agent, its recorded instances
	// (fanout.go); built on first use.
	instances map[string]int
	// now is the run's clock (Run.now).
	now func() time.Time
}

func newCommitter(e *ensemble.Ensemble, st *state.State, sink *events.Sink, sec *secrets.Redactor) *committer {
	c := &committer{ens: e, st: st, events: sink, secrets: sec, seenWarning: map[string]bool{}, lastOutput: map[string]state.OutputRef{}}
	for _, w := range st.Warnings() {
		c.seenWarning[warningKey(w)] = true
	}
	for _, rec := range st.History() {
		if a := e.Agent(rec.AgentName); a != nil && rec.Error == nil {
			c.noteOutput(a, rec.Execution, rec.OutputData)
		}
	}
	return c
}

// warningKey identifies a warning recorded once per run: a condition's
// failure by its message, a read of a missing key by its agent,
// expression and path (its suggestion may change with the value read),
// none of which grows with the turns.
func warningKey(w state.Warning) string {
	if w.Kind != "" {
		return w.Kind + "\x00" + w.AgentName + "\x00" + w.Dependency + "\x00" + w.Expression + "\x00" + w.Path
	}
	return w.AgentName + "\x00" + w.Dependency + "\x00" + w.Message
}

// warn records run-time condition failures, each distinct one once.
func (c *committer) warn(turn int, warns []resolver.Warning) {
	for _, w := range warns {
		if w.Miss != nil {
			if c.seenWarning[missKey(w.Agent, w.Dependency, w.Miss)] {
				continue // recorded already: its suggestion is not searched again
			}
			what := fmt.Sprintf("condition of %s ← %s", w.Agent, w.Dependency)
			if w.Dependency == "" {
				what = "when of " + w.Agent
			}
			c.record(turn, missWarning(w.Agent, what, w.Dependency, *w.Miss, false))
			continue
		}
		sw := state.Warning{TurnNumber: turn, AgentName: w.Agent, Dependency: w.Dependency, Expression: w.Expression,
			Message: fmt.Sprintf("condition of %s ← %s (%s) failed, counted as false: %s", w.Agent, w.Dependency, w.Expression, w.Message)}
		if w.Dependency == "" {
			sw.Message = fmt.Sprintf("when of %s (%s) failed, counted as false: %s", w.Agent, w.Expression, w.Message)
		}
		c.record(turn, sw)
	}
}

// record records a warning of turn, unless the run has it already, and
// emits its event.
func (c *committer) record(turn int, w state.Warning) {
	w.TurnNumber = turn
	k := warningKey(w)
	if c.seenWarning[k] {
		return
	}
	c.seenWarning[k] = true
	// Redacted where it is made, so that every sink (the state, its
	// export, events, reports, tests' output) has it redacted: a key
	// rebuilt by an expression from two outputs is in no output alone.
	w.Message, w.Expression = c.secrets.String(w.Message), c.secrets.String(w.Expression)
	w.Path, w.Suggestion = c.secrets.String(w.Path), c.secrets.String(w.Suggestion)
	c.st.Warn(w)
	c.strict = c.strict || w.Strict()
	ev := events.Event{Type: events.Warning, Turn: turn, Agent: w.AgentName, Message: w.Message}
	if w.Kind != "" {
		ev.Warning = &w
	}
	c.events.Emit(ev)
}

// ref is the execution whose output the state key holds, when that output
// is long enough to be referred to rather than copied.
func (c *committer) ref(key string) (state.OutputRef, bool) {
	ref, ok := c.lastOutput[key]
	return ref, ok
}

// commit applies a finished turn to the state, in file order: the edge
// bookkeeping of every ready agent first (against the outputs as they were
// when the turn started), then each agent's executions: counts, outputs,
// records and agent requests.
func (c *committer) commit(turn int, p *plan) {
	st := c.st
	for i := range p.execs {
		c.recordMisses(turn, p.execs[i].req.Agent.Name, p.execs[i].res)
	}
	for _, rd := range p.ready {
		fresh := rd.Fresh
		if rd.Skip != resolver.Run {
			fresh = nil // a skip consumes, but triggers nothing: nothing ran
		}
		st.Consume(rd.Agent.Name, rd.Satisfied, rd.Outputs, fresh)
		st.TakeRequests(rd.Agent.Name, len(rd.Requests))
	}
	execs := p.execs // grouped by agent, in the order of p.ready
	for i := range p.ready {
		if p.ready[i].Skip != resolver.Run {
			c.skip(turn, &p.ready[i])
			continue
		}
		n := 0
		for n < len(execs) && execs[n].agent == i {
			n++
		}
		if f := p.fans[i]; f != nil {
			c.fanOut(turn, p.ready[i].Agent, f, execs[:n])
		} else {
			c.agent(turn, p.ready[i].Agent, execs[:n])
		}
		execs = execs[n:]
	}
	st.TurnCount = turn
}

// newRecord is the history record of execution x, named name (an agent
// or an instance), before its output or error is set.
func newRecord(turn int, name string, execution int, x *execution) *state.Record {
	res := x.res
	rec := &state.Record{
		TurnNumber:    turn,
		AgentName:     name,
		Execution:     execution,
		InputData:     byReference(res.InputData, x.req.Dependencies, x.refs),
		ExecutionTime: x.took.Seconds(),
		Timestamp:     x.started.UTC(),
		Usage:         res.Usage,
		Stderr:        res.Stderr,
		Details:       res.Details,
	}
	if res.StopReason != "" {
		rec.StopReason = &res.StopReason
	}
	return rec
}

// agent folds the executions of one agent into the state. Today a ready
// agent is one execution, recorded as it is; each execution leaves one
// history record, which is how the resolver learns what ran.
func (c *committer) agent(turn int, a *ensemble.Agent, execs []execution) {
	for i := range execs {
		c.execution(turn, a, &execs[i])
	}
}

// execution records one execution of a: its count, its output (or error),
// its history record, the agent requests it made, and its event.
func (c *committer) execution(turn int, a *ensemble.Agent, x *execution) {
	st, res := c.st, x.res
	st.CountExecution(a.Name)
	rec := newRecord(turn, a.Name, x.req.Execution, x)
	if res.Memory != nil {
		st.SetMemory(a.Name, res.Memory)
	}
	ev := events.Event{Turn: turn, Agent: a.Name, Execution: x.req.Execution, Duration: rec.ExecutionTime}
	if res.Err != nil {
		msg := res.Err.Error()
		rec.Error = &msg
		ev.Type, ev.Error = events.AgentFailed, msg
	} else {
		rec.OutputData = res.Output
		rec.Handles = x.handles
		st.SetOutput(a.Name, a.StateKey(), res.Output)
		c.noteOutput(a, x.req.Execution, res.Output)
		if a.Conversation.TriggersConversation {
			if msg := c.queueRequests(a.Name, res.Output); msg != "" {
				rec.Error = &msg
			}
		}
		ev.Type, ev.Output, ev.Error = events.AgentCompleted, res.Output, deref(rec.Error)
	}
	st.AppendRecord(rec)
	c.events.Emit(ev)
}

// skip records that a ready agent was skipped instead of run
// (docs/semantics.md#guards-that-skip): a record marked skipped, with no
// execution number, output or error, whose input_data says why, and an
// agent_skipped event. Its count of executions does not move.
func (c *committer) skip(turn int, rd *resolver.Ready) {
	a := rd.Agent
	var input map[string]any
	var why string
	switch rd.Skip {
	case resolver.SkipWhen:
		input = map[string]any{"skipped_because": "when", "when": a.When}
		why = fmt.Sprintf("when (%s) is false", a.When)
	default:
		deps := make([]any, len(rd.Satisfied))
		for i, d := range rd.Satisfied {
			deps[i] = d
		}
		input = map[string]any{"skipped_because": "dependencies", "dependencies": deps}
		why = "its dependencies were skipped: " + strings.Join(rd.Satisfied, ", ")
	}
	c.st.AppendRecord(&state.Record{TurnNumber: turn, AgentName: a.Name, Skipped: true, InputData: input, Timestamp: c.now().UTC()})
	c.events.Emit(events.Event{Type: events.AgentSkipped, Turn: turn, Agent: a.Name, Message: why})
}

// byReference returns input data whose "dependencies" hold, in place of each
// output delivered unchanged and longer than a reference, a reference to the
// execution that produced it (docs/cli.md#the-result): the history holds
// that output already. Anything a runner changed or added stays as it is.
func byReference(inputData any, delivered map[string]any, refs map[string]state.OutputRef) any {
	m, ok := inputData.(map[string]any)
	if !ok || len(refs) == 0 {
		return inputData
	}
	deps, ok := m["dependencies"].(map[string]any)
	if !ok || len(deps) == 0 {
		return inputData
	}
	var out map[string]any
	for k, v := range deps {
		if ref, ok := refs[k]; ok && identical(v, delivered[k]) {
			if out == nil {
				out = make(map[string]any, len(deps))
				for k2, v2 := range deps {
					out[k2] = v2
				}
			}
			out[k] = &ref
		}
	}
	if out == nil {
		return inputData // every output is short: written in full
	}
	cp := make(map[string]any, len(m))
	for k, v := range m {
		cp[k] = v
	}
	cp["dependencies"] = out
	return cp
}

// noteOutput records that a's state key holds the output of its execution
// n: by reference from now on if it is long, in full if not.
// An output that itself looks like a reference is always referenced: in
// full, it would read as one.
func (c *committer) noteOutput(a *ensemble.Agent, n int, output any) {
	if longer(output, refSize) || state.IsOutputRef(output) {
		c.lastOutput[a.StateKey()] = state.OutputRef{AgentName: a.Name, Execution: n}
	} else {
		delete(c.lastOutput, a.StateKey())
	}
}

// refSize is about the size of a reference in JSON: shorter outputs are
// written in full.
const refSize = 100

// longer reports whether v, as compact JSON, is longer than n bytes; it
// stops walking v as soon as it knows.
func longer(v any, n int) bool {
	left := n
	var walk func(v any) bool // true: over budget
	walk = func(v any) bool {
		switch x := v.(type) {
		case string:
			left -= len(x) + 2
		case map[string]any:
			left -= 2
			for k, e := range x {
				if left -= len(k) + 4; left < 0 || walk(e) {
					return true
				}
			}
		case []any:
			left -= 2
			for _, e := range x {
				if left--; left < 0 || walk(e) {
					return true
				}
			}
		default:
			left -= 8 // numbers, booleans, null: a few bytes
		}
		return left < 0
	}
	return walk(v)
}

// identical reports whether a and b are the same value: the same map or
// list, or equal scalars. It never walks a value.
func identical(a, b any) bool {
	switch x := a.(type) {
	case map[string]any:
		y, ok := b.(map[string]any)
		return ok && len(x) == len(y) && (len(x) == 0 || reflect.ValueOf(x).UnsafePointer() == reflect.ValueOf(y).UnsafePointer())
	case []any:
		y, ok := b.([]any)
		return ok && len(x) == len(y) && (len(x) == 0 || &x[0] == &y[0])
	case nil, string, float64, bool, int:
		return a == b
	}
	return false
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// queueRequests reads "agent_requests" from an output (docs/semantics.md#agent-requests) and
// queues the valid ones for the next turn. It returns a message naming the
// requests it could not honour (malformed ones, unknown targets), or "".
func (c *committer) queueRequests(from string, output any) string {
	obj, ok := output.(map[string]any)
	if !ok {
		return ""
	}
	raw, ok := obj["agent_requests"]
	if !ok {
		return ""
	}
	list, ok := raw.([]any)
	if !ok {
		return "agent_requests must be a list of {target_agent_name, parameters}"
	}
	var problems, unknown []string
	for i, item := range list {
		m, ok := item.(map[string]any)
		if !ok {
			problems = append(problems, fmt.Sprintf("agent_requests[%d] must be an object {target_agent_name, parameters}", i+1))
			continue
		}
		target, _ := m["target_agent_name"].(string)
		switch {
		case target == "":
			problems = append(problems, fmt.Sprintf("agent_requests[%d] has no target_agent_name", i+1))
			continue
		case c.ens.Agent(target) == nil:
			unknown = append(unknown, strconv.Quote(target))
			continue
		}
		params, ok := m["parameters"].(map[string]any)
		if p, given := m["parameters"]; given && p != nil && !ok {
			problems = append(problems, fmt.Sprintf("agent_requests[%d] (for %q): parameters must be an object, got %s", i+1, target, jsonType(p)))
			continue
		}
		c.st.Request(state.AgentRequest{From: from, Target: target, Parameters: params})
	}
	if len(unknown) > 0 {
		problems = append(problems, "agent_requests names unknown agents: "+strings.Join(unknown, ", "))
	}
	return strings.Join(problems, "; ")
}

// jsonType names the JSON type of a decoded value.
func jsonType(v any) string {
	switch v.(type) {
	case string:
		return "string"
	case float64, int:
		return "number"
	case bool:
		return "boolean"
	case []any:
		return "array"
	}
	return fmt.Sprintf("%T", v)
}
