package engine

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/ensemble-run/ensemble/agent"
	"github.com/ensemble-run/ensemble/ensemble"
	"github.com/ensemble-run/ensemble/events"
	"github.com/ensemble-run/ensemble/internal/conditions"
	"github.com/ensemble-run/ensemble/internal/jsonvalue"
	"github.com/ensemble-run/ensemble/internal/opaque"
	"github.com/ensemble-run/ensemble/state"
)

// Fan-out (docs/semantics.md#fan-out): the planner expands a ready agent
// with a fan_out into one execution per item of its list, each an instance
// `name[i]`, before anything runs; the executor runs them with the turn's
// other executions, at most fan_out.max_parallel of them at once; the
// committer folds them back into one execution of the agent, whose output
// is the list of their outputs, and one history record per instance.

// fanPlan is what the planner decided for a fan-out agent whose list it
// could evaluate.
type fanPlan struct {
	base  execution // the agent's request: dependencies, refs, handles
	count int       // the list's length: the number of instances
}

// expand replaces, in p, the execution of each ready fan-out agent by its
// instances. An agent whose request failed, or whose over failed, yielded
// no list, or too long a list, stays one failed execution of the agent.
func (r *Run) expand(ctx context.Context, turn int, p *plan) {
	fan := false
	for _, rd := range p.ready {
		fan = fan || rd.Agent.FanOut != nil
	}
	if !fan {
		return
	}
	execs := make([]execution, 0, len(p.execs))
	for _, x := range p.execs {
		a := p.ready[x.agent].Agent
		if a.FanOut == nil || x.failed != nil {
			execs = append(execs, x)
			continue
		}
		items, err := r.items(ctx, a, &p.notes)
		if err != nil {
			x.failed = err
			execs = append(execs, x)
			continue
		}
		if p.fans == nil {
			p.fans = map[int]*fanPlan{}
		}
		p.fans[x.agent] = &fanPlan{base: x, count: len(items)}
		// One allocation for the instances: growing the list by doubling
		// copied it again and again (half a long plan's time).
		execs = slices.Grow(execs, len(items))
		first := len(execs) // where this fan-out's instances start
		gate := newFanGate(len(items), a.FanOut.MaxParallel)
		seq := r.committer.instancesOf(a.Name)
		var env *conditions.Env
		if len(a.Templates) > 0 {
			env = p.notes.env(templateEnv(r.st, a))
		}
		sizes := &fanSizes{agent: a, count: len(items)}
		for i, item := range items {
			if i%checkEvery == 0 && ctx.Err() != nil {
				// The run's deadline passed, or it was cancelled: the turn
				// will not run, so the rest of the list is not planned.
				break
			}
			req := *x.req
			name := ensemble.InstanceName(a.Name, i)
			req.Instance = &agent.Instance{Name: name, Item: item, Index: i, Count: len(items), Seq: seq + i + 1}
			req.Memory = nil // a fresh conversation per item
			req.Events = r.agentSink(turn, name)
			inst := execution{agent: x.agent, req: &req, refs: x.refs, gate: gate}
			if env != nil {
				// Each instance's templates, over its item: a failure
				// fails that instance only.
				req.Templates, inst.failed = templates(ctx, a, env, &conditions.Item{Value: item, Index: i, Count: len(items)}, &p.notes)
			}
			if err := sizes.add(name, item, req.Templates); err != nil {
				// Over the cap: the fan-out is one failed execution of
				// the agent, and the instances planned so far are
				// dropped with what their templates gave.
				clear(execs[first:])
				execs = execs[:first]
				delete(p.fans, x.agent)
				x.failed = err
				execs = append(execs, x)
				break
			}
			execs = append(execs, inst)
		}
	}
	p.execs = execs
}

// items evaluates a's fan_out.over as the turn starts.
func (r *Run) items(ctx context.Context, a *ensemble.Agent, notes *readNotes) ([]any, error) {
	fo := a.FanOut
	p := opaque.Get(fo.OverProgram)
	items, err := p.EvalContext(ctx, notes.env(selectEnv(r.st, p.UsesHistory)))
	notes.take(a.Name, "fan_out.over of "+a.Name, "", false)
	if err != nil {
		return nil, fmt.Errorf("fan_out.over (%s) failed: %w", fo.Over, err)
	}
	if len(items) > fo.MaxItems {
		return nil, fmt.Errorf("fan_out.over (%s) yielded %d items, more than fan_out.max_items (%d)", fo.Over, len(items), fo.MaxItems)
	}
	// The list may be a value of the state (`over: split.chunks`), which
	// other runs read too (the runs of a child fanned out share its
	// input): the plain items go into a list of their own.
	plain := make([]any, len(items))
	for i, v := range items {
		if i%checkEvery == 0 && ctx.Err() != nil {
			return nil, fmt.Errorf("fan_out.over (%s): %w", fo.Over, context.Cause(ctx))
		}
		if err := jsonvalue.Valid(v); err != nil {
			return nil, fmt.Errorf("fan_out.over (%s): item %d: %w", fo.Over, i, err)
		}
		plain[i] = jsonvalue.Plain(v)
	}
	return plain, nil
}

// checkEvery is how many items of a fan-out's list are planned between two
// looks at the run's context: a list of a million items stops being
// planned soon after the deadline, for a look that costs nothing beside
// the work of an item.
const checkEvery = 1024

// fanGate caps the running instances of one fan-out at
// fan_out.max_parallel. The instances start in item order because one
// goroutine starts them, one after the other (startFan): a fan-out capped
// to one at a time is a loop over its items, and a fan-out of a million
// items has at most max_parallel goroutines at once, not a million
// waiting.
type fanGate struct {
	slots chan struct{} // the places, fan_out.max_parallel; nil: no cap of its own
}

func newFanGate(n, maxParallel int) *fanGate {
	g := &fanGate{}
	if maxParallel > 0 && maxParallel < n {
		g.slots = make(chan struct{}, maxParallel)
	}
	return g
}

// acquire waits for a place among the running instances of x's fan-out
// (fan_out.max_parallel); false when ctx ended first. Other executions pass
// at once.
func (x *execution) acquire(ctx context.Context) bool {
	g := x.gate
	if g == nil || g.slots == nil {
		return true
	}
	select {
	case g.slots <- struct{}{}:
		return true
	case <-ctx.Done():
		return false
	}
}

// release gives back x's place among its fan-out's running instances.
func (x *execution) release() {
	if g := x.gate; g != nil && g.slots != nil {
		<-g.slots
	}
}

// eventName is the name an execution's events carry: the instance's for an
// instance of a fan-out agent, the agent's otherwise.
func eventName(req *agent.Request) string {
	if req.Instance != nil {
		return req.Instance.Name
	}
	return req.Agent.Name
}

// instancesOf is the number of instances of agent recorded in the history:
// the Seq of its next instance is one more. Counted once from the history,
// then kept up to date by fanOut.
func (c *committer) instancesOf(agent string) int {
	if c.instances == nil {
		c.instances = map[string]int{}
		for _, rec := range c.st.History() {
			if rec.Of != "" {
				c.instances[rec.Of]++
			}
		}
	}
	return c.instances[agent]
}

// shownInstances is how many failed instances the error of an on_error:
// fail fan-out names; their own errors name them all.
const shownInstances = 5

// fanOut folds a fan-out agent's instances (in item order) into the state:
// one record per instance, then one execution of the agent, whose output is
// the list of the instances' outputs (null for a failed one). With
// on_error: fail, a failed instance fails the agent's execution.
func (c *committer) fanOut(turn int, a *ensemble.Agent, f *fanPlan, execs []execution) {
	st := c.st
	n := f.base.req.Execution
	c.instancesOf(a.Name)
	c.instances[a.Name] += len(execs)
	outputs := make([]any, len(execs))
	var failed []string
	started, ended := time.Time{}, time.Time{}
	for i := range execs {
		x := &execs[i]
		res, in := x.res, x.req.Instance
		idx := in.Index
		rec := newRecord(turn, in.Name, n, x)
		rec.Instance, rec.Of = &idx, a.Name
		ev := events.Event{Turn: turn, Agent: in.Name, Execution: n, Duration: rec.ExecutionTime}
		if res.Err != nil {
			msg := res.Err.Error()
			rec.Error = &msg
			ev.Type, ev.Error = events.AgentFailed, msg
			failed = append(failed, in.Name)
		} else {
			rec.OutputData = res.Output
			outputs[i] = res.Output
			ev.Type, ev.Output = events.AgentCompleted, res.Output
		}
		st.AppendRecord(rec)
		c.events.Emit(ev)
		if started.IsZero() || x.started.Before(started) {
			started = x.started
		}
		if end := x.started.Add(x.took); end.After(ended) {
			ended = end
		}
	}
	if started.IsZero() {
		started = c.now()
		ended = started
	}

	st.CountExecution(a.Name)
	input := map[string]any{
		"agent":        a.Name,
		"dependencies": f.base.req.Dependencies,
		"turn":         turn,
		"execution":    n,
		"fan_out":      map[string]any{"over": a.FanOut.Over, "count": f.count},
	}
	rec := &state.Record{
		TurnNumber:    turn,
		AgentName:     a.Name,
		Execution:     n,
		InputData:     byReference(input, f.base.req.Dependencies, f.base.refs),
		ExecutionTime: ended.Sub(started).Seconds(),
		Timestamp:     started.UTC(),
	}
	ev := events.Event{Turn: turn, Agent: a.Name, Execution: n, Duration: rec.ExecutionTime}
	if len(failed) > 0 && a.FanOut.FailOnError {
		names := strings.Join(failed[:min(len(failed), shownInstances)], ", ")
		if more := len(failed) - shownInstances; more > 0 {
			names += fmt.Sprintf(" and %d more", more)
		}
		msg := fmt.Sprintf("%d of %d instances failed (fan_out.on_error is fail): %s", len(failed), len(execs), names)
		rec.Error = &msg
		ev.Type, ev.Error = events.AgentFailed, msg
	} else {
		rec.OutputData = outputs
		rec.Handles = f.base.handles
		st.SetOutput(a.Name, a.StateKey(), outputs)
		c.noteOutput(a, n, outputs)
		ev.Type, ev.Output = events.AgentCompleted, outputs
	}
	st.AppendRecord(rec)
	c.events.Emit(ev)
}

// fanInterrupted counts the instances of one fan-out in a turn cut short,
// for one error that names them all.
type fanInterrupted struct {
	gate              *fanGate
	agent             string
	count             int // the list's length
	finished, running int
	first             string // the first instance that did not finish
}

func (f *fanInterrupted) add(x *execution) {
	switch {
	case x.res != nil && x.res.Err == nil:
		f.finished++
	case x.res != nil:
		f.running++
		if f.first == "" {
			f.first = x.req.Instance.Name
		}
	default:
		if f.first == "" {
			f.first = x.req.Instance.Name
		}
	}
}

// report appends the error of the fan-out to errs; nothing for a nil f.
func (f *fanInterrupted) report(errs []RunError, turn int, why string) []RunError {
	if f == nil {
		return errs
	}
	msg := fmt.Sprintf("fan-out stopped before it finished: %s; of its %d instances, %d finished (their outputs discarded), %d failed or were stopped while running, %d never started",
		why, f.count, f.finished, f.running, f.count-f.finished-f.running)
	if f.first != "" {
		msg += " (the first unfinished: " + f.first + ")"
	}
	return append(errs, RunError{TurnNumber: turn, AgentName: f.agent, Message: msg})
}
