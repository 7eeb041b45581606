package resolver

import (
	"context"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/ensemble-run/ensemble/ensemble"
	"github.com/ensemble-run/ensemble/internal/conditions"
	"github.com/ensemble-run/ensemble/internal/opaque"
	scriptkind "github.com/ensemble-run/ensemble/kinds/script"
	"github.com/ensemble-run/ensemble/state"
)

// --- building ensembles by hand ---

type agentOpt func(*ensemble.Agent)

func triggerAll() agentOpt { return func(a *ensemble.Agent) { a.TriggerAll = true } }

func maxTurns(n int) agentOpt { return func(a *ensemble.Agent) { a.Conversation.MaxTurns = n } }
func stateKey(k string) agentOpt {
	return func(a *ensemble.Agent) { a.Conversation.StateKey = k }
}
func deps(ds ...*ensemble.Dependency) agentOpt {
	return func(a *ensemble.Agent) { a.Dependencies = append(a.Dependencies, ds...) }
}

func agent(name string, opts ...agentOpt) *ensemble.Agent {
	a := &ensemble.Agent{Name: name, Kind: scriptkind.Kind{}, Conversation: ensemble.Conversation{MaxTurns: 1}}
	for _, o := range opts {
		o(a)
	}
	return a
}

// req is a required dependency, opt an optional one.
func req(name string) *ensemble.Dependency {
	return &ensemble.Dependency{AgentName: name, RequiresAll: true}
}

func opt(name string) *ensemble.Dependency {
	return &ensemble.Dependency{AgentName: name}
}

func when(d *ensemble.Dependency, cond string) *ensemble.Dependency {
	d.Condition = cond
	d.Program = opaque.Make[ensemble.CompiledCondition](conditions.MustCompile(cond))
	return d
}

// guard gives an agent a when: guard.
func guard(cond string) agentOpt {
	return func(a *ensemble.Agent) {
		a.When, a.WhenProgram = cond, opaque.Make[ensemble.CompiledCondition](conditions.MustCompile(cond))
	}
}

func maxExec(d *ensemble.Dependency, n int) *ensemble.Dependency {
	d.MaxExecutions = n
	return d
}

func ens(agents ...*ensemble.Agent) *ensemble.Ensemble {
	e := &ensemble.Ensemble{Name: "test", Agents: agents, Limits: ensemble.Limits{MaxTotalTurns: 100}}
	e.Index()
	return e
}

// --- running turns by hand ---

// consumed does the bookkeeping of r's agent executing, as the engine's
// committer does: its edges, then the requests that made it ready.
func consumed(s *state.State, r Ready) {
	fresh := r.Fresh
	if r.Skip != Run {
		fresh = nil // a skip triggers nothing
	}
	s.Consume(r.Agent.Name, r.Satisfied, r.Outputs, fresh)
	s.TakeRequests(r.Agent.Name, len(r.Requests))
}

// failed as an agent's output makes its execution fail.
type failure struct{}

var failed = failure{}

// sim plays turns the way the engine does: resolve, run the ready agents,
// then commit: consumption first, then executions, outputs and records.
type sim struct {
	t        *testing.T
	e        *ensemble.Ensemble
	s        *state.State
	warnings []Warning
	last     []Ready
	inc      *Resolver // checked against Resolve at every turn
}

func newSim(t *testing.T, e *ensemble.Ensemble) *sim {
	return &sim{t: t, e: e, s: state.New("the input"), inc: New(e)}
}

func names(rs []Ready) []string {
	out := make([]string, len(rs))
	for i, r := range rs {
		out[i] = r.Agent.Name
		if r.Skip != Run {
			out[i] = "-" + r.Agent.Name // skipped
		}
	}
	return out
}

// resolve returns the agents ready now.
func (w *sim) resolve() []Ready {
	w.t.Helper()
	r, warns, err := Resolve(context.Background(), w.e, w.s)
	if err != nil {
		w.t.Fatal(err)
	}
	if w.inc != nil {
		r2, warns2, err := w.inc.Ready(context.Background(), w.s)
		if err != nil {
			w.t.Fatal(err)
		}
		if !reflect.DeepEqual(r, r2) || !reflect.DeepEqual(warns, warns2) {
			w.t.Fatalf("turn %d: Resolver.Ready = %v %v, Resolve = %v %v", w.s.TurnCount+1, names(r2), warns2, names(r), warns)
		}
	}
	w.warnings = append(w.warnings, warns...)
	return r
}

// turn asserts that exactly the agents want are ready, and runs them: each
// produces outputs[name] (failed: fails; absent: a default string output).
func (w *sim) turn(want string, outputs map[string]any) []Ready {
	w.t.Helper()
	ready := w.resolve()
	if got := strings.Join(names(ready), ","); got != want {
		w.t.Fatalf("turn %d: ready = [%s], want [%s]", w.s.TurnCount+1, got, want)
	}
	w.run(ready, outputs)
	return ready
}

func (w *sim) run(ready []Ready, outputs map[string]any) {
	w.last = ready
	if len(ready) == 0 {
		return
	}
	turn := w.s.TurnCount + 1
	for _, r := range ready {
		consumed(w.s, r)
	}
	for _, r := range ready {
		a := r.Agent
		if r.Skip != Run {
			w.s.AppendRecord(&state.Record{TurnNumber: turn, AgentName: a.Name, Skipped: true})
			continue
		}
		w.s.CountExecution(a.Name)
		rec := &state.Record{TurnNumber: turn, AgentName: a.Name, Execution: w.s.Executions(a.Name)}
		out, ok := outputs[a.Name]
		if !ok {
			out = fmt.Sprintf("%s #%d", a.Name, rec.Execution)
		}
		if out == failed {
			msg := "boom"
			rec.Error = &msg
		} else {
			rec.OutputData = out
			w.s.SetOutput(a.Name, a.StateKey(), out)
		}
		w.s.AppendRecord(rec)
	}
	w.s.TurnCount = turn
}

// done asserts that nothing is ready any more.
func (w *sim) done() {
	w.t.Helper()
	if ready := w.resolve(); len(ready) > 0 {
		w.t.Fatalf("after turn %d: ready = %v, want nothing", w.s.TurnCount, names(ready))
	}
}

// ready returns the Ready of the named agent in the last turn.
func (w *sim) ready(name string) Ready {
	w.t.Helper()
	for _, r := range w.last {
		if r.Agent.Name == name {
			return r
		}
	}
	w.t.Fatalf("%s was not ready in turn %d", name, w.s.TurnCount)
	return Ready{}
}

// delivered asserts the satisfied and fresh edges of name in the last turn.
func (w *sim) delivered(name string, satisfied, fresh []string) {
	w.t.Helper()
	r := w.ready(name)
	if !slices.Equal(r.Satisfied, satisfied) || !slices.Equal(r.Fresh, fresh) {
		w.t.Fatalf("turn %d: %s got satisfied=%v fresh=%v, want satisfied=%v fresh=%v",
			w.s.TurnCount, name, r.Satisfied, r.Fresh, satisfied, fresh)
	}
}

func (w *sim) request(from, target string, params map[string]any) {
	w.s.Request(state.AgentRequest{From: from, Target: target, Parameters: params})
}

// runAll plays turns until nothing is ready (at most limit turns) and returns
// the agents of each turn.
func (w *sim) runAll(limit int, outputs func(turn int, a string) any) []string {
	var seq []string
	for i := 0; i < limit; i++ {
		ready := w.resolve()
		if len(ready) == 0 {
			return seq
		}
		seq = append(seq, strings.Join(names(ready), ","))
		outs := map[string]any{}
		for _, r := range ready {
			if outputs != nil {
				if o := outputs(w.s.TurnCount+1, r.Agent.Name); o != nil {
					outs[r.Agent.Name] = o
				}
			}
		}
		w.run(ready, outs)
	}
	w.t.Fatalf("still running after %d turns: %v", limit, seq)
	return nil
}
