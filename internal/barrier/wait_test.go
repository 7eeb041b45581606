package barrier

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ensemble-run/ensemble/agent"
	"github.com/ensemble-run/ensemble/ensemble"
	"github.com/ensemble-run/ensemble/internal/responses"
)

// A barrier: what injected responses answer runs at once; an agent they
// do not answer, a simulated one, or any agent of a runner without
// responses waits first, and does not run when the wait fails (ErrNotSaved);
// Reached says whether one went through.
func TestBarrier(t *testing.T) {
	t.Parallel()
	e := testEnsemble(t, scriptAgent("injected"), scriptAgent("script"), scriptAgent("simulated"))
	r := responses.NewResponses()
	r.Add("injected", "from the file")
	r.SetSimulate("simulated", "efficient", "play a user")
	req := func(name string) *agent.Request {
		return &agent.Request{Ensemble: e, Agent: e.Agent(name), Input: "in", Turn: 1, Execution: 1}
	}
	for _, tt := range []struct {
		name         string
		waitErr      error
		agent        string
		viaResponses bool // next behind injected responses, or alone
		waits        int
		ran          string // what ran: "", "next" or "simulate"
		err          string
	}{
		{"injected", nil, "injected", true, 0, "", ""},
		{"injected while the wait fails", errors.New("disk full"), "injected", true, 0, "", ""},
		{"not injected", nil, "script", true, 1, "next", ""},
		{"simulated", nil, "simulated", true, 1, "simulate", ""},
		{"not injected, the wait fails", errors.New("disk full"), "script", true, 1, "", "not run: the turns before it could not be saved: disk full"},
		{"simulated, the wait fails", errors.New("disk full"), "simulated", true, 1, "", "not run: the turns before it could not be saved: disk full"},
		{"no responses", nil, "injected", false, 1, "next", ""},
		{"no responses, the wait fails", errors.New("disk full"), "script", false, 1, "", "disk full"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			waits, ran := 0, ""
			next := agent.RunnerFunc(func(ctx context.Context, req *agent.Request) *agent.Result {
				ran = "next"
				return &agent.Result{Output: "ran"}
			})
			var runner agent.Runner = next
			if tt.viaResponses {
				inj := responses.Injected(r, next)
				inj.Simulate = func(ctx context.Context, req *agent.Request, profile, prompt string) *agent.Result {
					ran = "simulate"
					return &agent.Result{Output: "simulated"}
				}
				runner = inj
			}
			b := &Barrier{Wait: func() error { waits++; return tt.waitErr }}
			got := b.Wrap(runner)
			if tt.viaResponses && got != runner {
				t.Fatal("Wrap replaced the injected runner instead of changing it in place")
			}
			res := got.Run(context.Background(), req(tt.agent))
			if waits != tt.waits || ran != tt.ran {
				t.Errorf("%d waits, ran %q; want %d, %q", waits, ran, tt.waits, tt.ran)
			}
			switch {
			case tt.err == "" && res.Err != nil:
				t.Errorf("error %v", res.Err)
			case tt.err != "" && (res.Err == nil || !strings.Contains(res.Err.Error(), tt.err) || !errors.Is(res.Err, ErrNotSaved)):
				t.Errorf("error %v, want %q and ErrNotSaved", res.Err, tt.err)
			}
			if reached := b.Reached(); reached != (ran != "") {
				t.Errorf("Reached() = %v after running %q", reached, ran)
			}
			if b.Reached() {
				t.Error("Reached() is still true after it was read")
			}
		})
	}
}

// scriptKind stands in for the script kind, which imports this package.
type scriptKind struct{}

func (scriptKind) String() string                           { return "script" }
func (scriptKind) Key() string                              { return "script" }
func (scriptKind) Fields() []string                         { return nil }
func (scriptKind) Decode(*ensemble.Fields, *ensemble.Agent) {}

func scriptAgent(name string) *ensemble.Agent {
	return &ensemble.Agent{Name: name, Kind: scriptKind{}}
}

func testEnsemble(t *testing.T, agents ...*ensemble.Agent) *ensemble.Ensemble {
	t.Helper()
	e := &ensemble.Ensemble{
		Path: filepath.Join(t.TempDir(), "ensemble.yaml"), Name: "test", Agents: agents,
		Models: map[string]*ensemble.ModelProfile{"efficient": {Name: "efficient", Provider: "openai", Model: "m"}},
	}
	e.Index()
	return e
}
