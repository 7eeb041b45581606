package ask

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/ensemble-run/ensemble/agent"
	"github.com/ensemble-run/ensemble/ensemble"
)

// ask_mode is terminal (the default) or suspend; anything else is an error
// at the field's position.
func TestAskModeLoads(t *testing.T) {
	t.Parallel()
	load := func(mode string) (*ensemble.Ensemble, error) {
		y := "name: x\nagents:\n  - name: a\n    ask: \"ok?\"\n"
		if mode != "" {
			y += "    ask_mode: " + mode + "\n"
		}
		return ensemble.LoadBytes("x.yaml", []byte(y), ensemble.LoadOptions{Kinds: []ensemble.Kind{Kind{}}})
	}
	for mode, want := range map[string]string{"": "", "terminal": "", "suspend": ModeSuspend} {
		e, err := load(mode)
		if err != nil {
			t.Fatalf("%q: %v", mode, err)
		}
		if got := SpecOf(e.Agent("a")).Mode; got != want {
			t.Errorf("ask_mode %q: mode %q, want %q", mode, got, want)
		}
	}
	_, err := load("wait")
	if err == nil || !strings.Contains(err.Error(), `x.yaml:5:15: agent "a": ask_mode must be terminal or suspend, not "wait"`) {
		t.Errorf("bad ask_mode: %v", err)
	}
}

// An ask agent of a child ensemble never waits (the child's run is not
// saved): with no terminal it fails, naming its path, even when the run is
// durable; answers given to resume are not for it.
func TestAskInAChildNeverWaits(t *testing.T) {
	t.Parallel()
	a := &ensemble.Agent{Name: "verdict", Kind: Kind{}, Spec: &Spec{Question: "Decide"}}
	r := &Runner{Suspend: true}
	answers := agent.Services{Answers: agent.NewAnswers(map[string]string{"verdict": "yes"})}
	res := r.Run(context.Background(), &agent.Request{Agent: a, Path: "review_round/verdict", Services: answers})
	if res.Err == nil || errors.Is(res.Err, agent.ErrAwaitingInput) || !strings.Contains(res.Err.Error(), `agent "review_round/verdict" asks a person inside a child ensemble`) {
		t.Fatalf("err %v, output %v", res.Err, res.Output)
	}
	res = r.Run(context.Background(), &agent.Request{Agent: a, Services: answers})
	if res.Err != nil || res.Output != "yes" {
		t.Fatalf("at the top: err %v, output %v", res.Err, res.Output)
	}
}
