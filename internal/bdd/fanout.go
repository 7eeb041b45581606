package bdd

import (
	"fmt"
	"strings"

	"github.com/cucumber/godog"

	"github.com/ensemble-run/ensemble/ensemble"
	"github.com/ensemble-run/ensemble/state"
)

// Steps about fan-out agents (docs/semantics.md#fan-out), listed in
// stepDefs. The other steps take an instance's name, `summarize[1]`,
// wherever they take an agent's: its executions are its records in the
// history.

// instanceAgent is the fan-out agent name is an instance of, if it is one.
func instanceAgent(e *ensemble.Ensemble, name string) (*ensemble.Agent, bool) {
	agent, _, ok := ensemble.ParseInstanceName(name)
	if !ok {
		return nil, false
	}
	a := e.Agent(agent)
	return a, a != nil && a.FanOut != nil
}

// instanceRuns is the number of records of an instance name; ok is false
// when name is not an instance's.
func (s *Scenario) instanceRuns(name string) (n int, ok bool) {
	if s.ens == nil || s.ens.Agent(name) != nil {
		return 0, false
	}
	if _, ok := instanceAgent(s.ens, name); !ok {
		return 0, false
	}
	for _, r := range s.result.ConversationHistory {
		if r.AgentName == name {
			n++
		}
	}
	return n, true
}

func (s *Scenario) thenRanOver(name string, want int) error {
	a, err := s.agent(name)
	if err != nil {
		return err
	}
	if a.FanOut == nil {
		return fmt.Errorf("agent %q has no fan_out", name)
	}
	recs, err := s.records(name)
	if err != nil {
		return err
	}
	if len(recs) == 0 {
		return fmt.Errorf("agent %q did not run, want it to run over %s (agents ran in order %s)", name, items(want), quote(strings.Join(order(s.result), ", ")))
	}
	last := recs[len(recs)-1]
	got := -1
	if in, ok := last.InputData.(map[string]any); ok {
		if fo, ok := in["fan_out"].(map[string]any); ok {
			got, _ = asInt(fo["count"])
		}
	}
	switch {
	case got < 0 && last.Error != nil:
		return fmt.Errorf("agent %q failed before it fanned out: %s", name, cut(*last.Error, 400))
	case got != want:
		return fmt.Errorf("agent %q ran over %s in its execution %d, want %s", name, items(got), last.Execution, items(want))
	}
	return nil
}

func asInt(v any) (int, bool) {
	switch x := v.(type) {
	case int:
		return x, true
	case float64:
		return int(x), true
	}
	return 0, false
}

func items(n int) string {
	if n == 1 {
		return "1 item"
	}
	return fmt.Sprintf("%d items", n)
}

// item is what the instance was given in its latest execution.
func (s *Scenario) item(name string) (any, error) {
	if _, err := s.agent(name); err != nil {
		return nil, err
	}
	if _, ok := instanceAgent(s.ens, name); !ok {
		return nil, fmt.Errorf("%q is not an instance of a fan-out agent (write it name[index], like summarize[1])", name)
	}
	recs, err := s.records(name)
	if err != nil {
		return nil, err
	}
	if len(recs) == 0 {
		return nil, fmt.Errorf("instance %q did not run (agents ran in order %s)", name, quote(strings.Join(order(s.result), ", ")))
	}
	in, _ := state.ResolveInput(s.result.ConversationHistory, recs[len(recs)-1].InputData).(map[string]any)
	item, ok := in["item"]
	if !ok {
		// A live LLM instance's input data is its messages.
		return nil, fmt.Errorf("instance %q has no item in its input data (a live LLM agent records its messages instead: use the input step)", name)
	}
	return item, nil
}

func (s *Scenario) thenInstanceReceived(name, want string) error {
	want = unq(want)
	item, err := s.item(name)
	if err != nil {
		return err
	}
	if text(item) != want {
		return fmt.Errorf("instance %q received %s, want %s", name, show(item), quote(want))
	}
	return nil
}

func (s *Scenario) thenInstanceReceivedDoc(name string, ds *godog.DocString) error {
	want, isText, err := docValue(ds, true)
	if err != nil {
		return err
	}
	item, err := s.item(name)
	if err != nil {
		return err
	}
	if isText && strings.TrimSpace(text(item)) == strings.TrimSpace(want.(string)) || !isText && equalValues(item, want) {
		return nil
	}
	return fmt.Errorf("instance %q received %s, want %s", name, show(item), show(want))
}
