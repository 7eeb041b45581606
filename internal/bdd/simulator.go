package bdd

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/ensemble-run/ensemble/agent"
	"github.com/ensemble-run/ensemble/agentpath"
	"github.com/ensemble-run/ensemble/ensemble"
	"github.com/ensemble-run/ensemble/kinds"
	"github.com/ensemble-run/ensemble/kinds/ask"
	"github.com/ensemble-run/ensemble/scriptexec"
	"github.com/ensemble-run/ensemble/state"
)

// Simulated people (docs/testing.md#simulated-people) answer a scenario's
// ask agents in place of a person: a policy of fixed values (simpolicy.go),
// or a model playing a person with a goal, for a number of answers at most.
// They belong to the test, not to the run: the model requests of a
// simulated person are left out of the run's usage (its budget, the steps
// about its requests and cost, the baselines) and counted apart.

// simulators are the simulated people of one scenario, by the agent they
// answer (its name, or a child ensemble's agent's path).
type simulators struct {
	mu    sync.Mutex
	by    map[string]*simulator
	order []string    // the agents, in the order the steps gave them
	spent state.Usage // what the simulated people's model requests used
}

// simulator answers one ask agent.
type simulator struct {
	agent   string
	policy  *policy  // or
	persona *persona // a model playing a person
	answers int      // answers given (or tried) so far
}

// persona is a model playing a person who wants something.
type persona struct {
	profile string
	goal    string
	max     int // answers at most: the next ask fails
}

// personaPrompt is the persona of a simulated person: its goal. The model
// also gets the simulated users' instruction (docs/llm.md#simulated-users).
func personaPrompt(goal string) string {
	return "You are the person the agents of an automated workflow ask for answers. " +
		"What you want from it: " + strings.TrimSpace(goal) + "\n" +
		"Answer each question briefly, as that person would, to get what you want."
}

// SimulatorSpent is what the scenario's simulated people spent on models
// (docs/testing.md#simulated-people), which its run's usage leaves out.
func (s *Scenario) SimulatorSpent() state.Usage {
	if s.sims == nil {
		return state.Usage{}
	}
	s.sims.mu.Lock()
	defer s.sims.mu.Unlock()
	return s.sims.spent
}

// addSimulator gives agent a simulator, once.
func (s *Scenario) addSimulator(sim *simulator) error {
	if s.sims == nil {
		s.sims = &simulators{by: map[string]*simulator{}}
	}
	if _, dup := s.sims.by[sim.agent]; dup {
		return fmt.Errorf("ask agent %q is already answered by a simulator in this scenario", sim.agent)
	}
	s.sims.by[sim.agent] = sim
	s.sims.order = append(s.sims.order, sim.agent)
	if s.ens != nil {
		return s.checkSimulator(s.ens, sim)
	}
	return nil
}

// checkSimulators checks every simulator against e: what the Given steps
// could not check before the ensemble was loaded.
func (s *Scenario) checkSimulators(e *ensemble.Ensemble) error {
	if s.sims == nil {
		return nil
	}
	for _, name := range s.sims.order {
		if err := s.checkSimulator(e, s.sims.by[name]); err != nil {
			return err
		}
	}
	return nil
}

// checkSimulator checks that sim's agent is an ask agent of e with no
// injected responses, that its policy's values fit it and that its
// persona's profile is one of e.
func (s *Scenario) checkSimulator(e *ensemble.Ensemble, sim *simulator) error {
	a, err := s.agent(sim.agent)
	if err != nil {
		return err
	}
	if !agent.AsksHuman(a) {
		return fmt.Errorf("agent %q is a %s agent, not an ask agent: a simulator answers the agents that ask a person", sim.agent, a.Kind)
	}
	for _, name := range s.responses.Agents() {
		if name == sim.agent {
			return fmt.Errorf("ask agent %q has both injected responses and a simulator: give it one or the other", sim.agent)
		}
	}
	if sim.policy != nil {
		return sim.policy.check(a)
	}
	if _, ok := e.Models[sim.persona.profile]; !ok {
		return fmt.Errorf("ask agent %q is answered by a simulated person with model profile %q, but the ensemble %q has no such profile", sim.agent, sim.persona.profile, e.Name)
	}
	return nil
}

func (s *Scenario) givenSimulatorPolicy(name, text string) error {
	p, err := parsePolicy(unq(text))
	if err != nil {
		return fmt.Errorf("ask agent %q: %w", name, err)
	}
	return s.addSimulator(&simulator{agent: name, policy: p})
}

func (s *Scenario) givenSimulatedPerson(name, profile, goal string, max int) error {
	goal = unq(goal)
	switch {
	case strings.TrimSpace(goal) == "":
		return fmt.Errorf("ask agent %q: the simulated person's goal is empty", name)
	case max < 1:
		return fmt.Errorf("ask agent %q: the simulated person must give at least 1 answer, got at most %d", name, max)
	}
	return s.addSimulator(&simulator{agent: name, persona: &persona{profile: profile, goal: goal, max: max}})
}

func (s *Scenario) thenSimulatedRequests(n int) error {
	if _, err := s.ranResult(); err != nil {
		return err
	}
	u := s.SimulatorSpent()
	if u.Requests != n {
		return fmt.Errorf("the simulated people made %s (%d tokens), want %d", requestsText(u.Requests), u.Tokens(), n)
	}
	return nil
}

// simulatedAsk answers the agents of an asking kind that have a
// simulator, and hands the others to next, the kind's own runner.
type simulatedAsk struct {
	s    *Scenario
	next agent.Runner
	// play has a model play a simulated person: Options.Simulate, else
	// the LLM kind's own runner when the scenario's runs call models
	// through the kinds' runners (Options.Models: `ensemble test`).
	play func(ctx context.Context, req *agent.Request, modelProfile, prompt string) *agent.Result
}

var _ agent.Runner = (*simulatedAsk)(nil)

// askRunners are the runners that replace the asking kinds' when the
// scenario has simulators; each still asks (waits, in a test) for the
// agents that have none.
func (s *Scenario) askRunners(r map[string]agent.Runner) {
	if s.sims == nil {
		return
	}
	play := s.opts.Simulate
	if play == nil && s.opts.LLM == nil && s.opts.Models {
		// As a session plays a simulated user: the LLM kind's runner.
		play = s.kinds().Runner(&agent.Host{LookupEnv: s.lookupEnv}, nil).Simulator()
	}
	// The kinds a session gives a test: no terminal, and a question with
	// no answer waits.
	for _, k := range s.kinds().With(kinds.Options{Ask: ask.Options{Suspend: true}}).Kinds() {
		if _, done := r[k.String()]; done || !agent.KindAsksHuman(k) {
			continue
		}
		r[k.String()] = &simulatedAsk{s: s, next: k.Runner(&agent.Host{LookupEnv: s.lookupEnv}), play: play}
	}
}

// Run answers req with its agent's simulator, or hands it on.
func (sa *simulatedAsk) Run(ctx context.Context, req *agent.Request) *agent.Result {
	sims := sa.s.sims
	name := cmp.Or(req.Path, req.Agent.Name)
	sims.mu.Lock()
	sim := sims.by[name]
	if sim == nil { // a child of a fan-out's instance, by the path every instance's child has
		sim = sims.by[agentpath.PathWithoutInstances(name)]
	}
	n := 0
	if sim != nil {
		sim.answers++
		n = sim.answers
	}
	sims.mu.Unlock()
	if sim == nil {
		return sa.next.Run(ctx, req)
	}
	in := scriptexec.BaseInputData(req)
	in["ask"] = agent.Question(req.Agent)
	if sim.policy != nil {
		in["simulator"] = sim.policy.text
		out := sim.policy.answer(n)
		if err := checkAnswer(req.Agent, out); err != nil {
			return &agent.Result{InputData: in, Err: fmt.Errorf("ask agent %q cannot take the simulator's answer %d, %s: %w", name, n, jsonText(out), err)}
		}
		return &agent.Result{InputData: in, Output: out}
	}
	return sa.person(ctx, req, sim, n, in)
}

// person has a model play sim's person for answer n: the run's budget
// does not see its request, and its usage goes to the simulated people's.
func (sa *simulatedAsk) person(ctx context.Context, req *agent.Request, sim *simulator, n int, in map[string]any) *agent.Result {
	name := cmp.Or(req.Path, req.Agent.Name)
	p := sim.persona
	if n > p.max {
		return &agent.Result{InputData: in, Err: fmt.Errorf("ask agent %q: the simulated person gave up after %d answers (its limit), without reaching its goal %s", name, p.max, quote(cut(p.goal, 120)))}
	}
	play := sa.play
	if play == nil {
		return &agent.Result{InputData: in, Err: fmt.Errorf("ask agent %q is answered by a simulated person, and no model provider is available to play it", name)}
	}
	r := *req
	r.Budget = nil // the test's spend, not the run's
	res := play(ctx, &r, p.profile, personaPrompt(p.goal))
	if res == nil {
		return &agent.Result{InputData: in, Err: errors.New("the simulated person gave no result")}
	}
	if res.Usage != nil {
		sa.s.sims.mu.Lock()
		sa.s.sims.spent.Add(res.Usage)
		sa.s.sims.mu.Unlock()
		sa.s.opts.simSpend.add(res.Usage)
		res.Usage = nil
	}
	if res.Err == nil {
		if err := checkAnswer(req.Agent, res.Output); err != nil {
			res.Err = fmt.Errorf("ask agent %q cannot take the simulated person's answer %d, %s: %w", name, n, jsonText(res.Output), err)
		}
	}
	return res
}
