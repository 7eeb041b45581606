package bdd

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/cucumber/godog"

	"github.com/ensemble-run/ensemble/ensemble"
	"github.com/ensemble-run/ensemble/internal/jsonvalue"
	"github.com/ensemble-run/ensemble/internal/responses"
)

// The Given steps, which set up a scenario, and the When steps, which run
// or validate its ensemble.

// givenEnsemble names the ensemble file. It is loaded at once, but a load
// failure fails only the steps that need the ensemble: a later Given step
// may still fix it (a profiles file the ensemble's model_profile is in).
func (s *Scenario) givenEnsemble(path string) error {
	if err := s.setFile(path); err != nil {
		return err
	}
	return s.afterLoad()
}

func (s *Scenario) givenInlineEnsemble(ds *godog.DocString) error {
	if err := s.setInline(ds); err != nil {
		return err
	}
	return s.afterLoad()
}

// afterLoad loads the ensemble and checks the responses queued before it
// was named.
func (s *Scenario) afterLoad() error {
	if s.load() != nil {
		return nil
	}
	for _, name := range s.responses.Agents() {
		if _, err := s.agent(name); err != nil { // an agent, or an instance of a fan-out agent
			return fmt.Errorf("responses were given for agent %q, but %w", name, unknownAgent(s.ens, name))
		}
	}
	return s.checkSimulators(s.ens)
}

func (s *Scenario) givenProfiles(path string) error {
	p := s.Resolve(path)
	if _, err := os.Stat(p); err != nil {
		return fmt.Errorf("the profiles file %s cannot be read: %v", quote(path), err)
	}
	s.profiles = append(s.profiles, p)
	if s.ensPath != "" || s.inline != nil {
		return s.afterLoad()
	}
	return nil
}

func (s *Scenario) givenInput(text string) error {
	text = unq(text)
	s.input = &text
	return nil
}

func (s *Scenario) givenInputDoc(ds *godog.DocString) error {
	if ds == nil {
		return errors.New("this step needs the input in a doc string below it")
	}
	return s.givenInput(ds.Content)
}

// checkAgentIfLoaded validates an agent name when the ensemble is known;
// otherwise `When the ensemble runs` checks it.
func (s *Scenario) checkAgentIfLoaded(name string) error {
	if s.ens == nil {
		return nil
	}
	_, err := s.agent(name)
	return err
}

// respondsTo is where the responses for agent go: a judge's replies
// (judge.go) for a judge's name, else the run's, once the name is checked.
func (s *Scenario) respondsTo(agent string) (*responses.Responses, error) {
	if r, ok := s.judgeReplies(agent); ok {
		return r, nil
	}
	if err := s.checkAgentIfLoaded(agent); err != nil {
		return nil, err
	}
	return s.responses, nil
}

func (s *Scenario) givenResponds(agent, reply string) error {
	reply = unq(reply)
	to, err := s.respondsTo(agent)
	if err != nil {
		return err
	}
	to.AddText(agent, reply)
	return nil
}

func (s *Scenario) givenRespondsDoc(agent string, ds *godog.DocString) error {
	to, err := s.respondsTo(agent)
	if err != nil {
		return err
	}
	v, isText, err := docValue(ds, true)
	if err != nil {
		return fmt.Errorf("agent %q responds: %w", agent, err)
	}
	switch str, isString := v.(string); {
	case isText:
		to.AddText(agent, str)
	case isString:
		// A JSON string is the output itself, but the responses take a
		// string as reply text, which is parsed: give it quoted.
		to.AddText(agent, jsonvalue.Compact(str))
	default:
		to.Add(agent, v)
	}
	return nil
}

func (s *Scenario) givenResponsesFile(path string) error {
	r, err := responses.LoadResponses(s.Resolve(path))
	if err != nil {
		var list *ensemble.ErrorList
		if errors.As(err, &list) {
			return fmt.Errorf("the responses file %s is invalid:\n  %s", quote(path), strings.ReplaceAll(list.Error(), "\n", "\n  "))
		}
		return fmt.Errorf("the responses file %s cannot be read: %v", quote(path), errors.Unwrap(err))
	}
	if s.ens != nil {
		if err := r.Validate(s.ens); err != nil {
			return fmt.Errorf("the responses file %s does not fit the ensemble %q:\n  %s", quote(path), s.ens.Name, strings.ReplaceAll(err.Error(), "\n", "\n  "))
		}
	}
	s.responses.Merge(r)
	s.respFile = path
	return nil
}

func (s *Scenario) givenSimulatedText(agent, profile, prompt string) error {
	return s.givenSimulated(agent, profile, unq(prompt))
}

func (s *Scenario) givenSimulated(agent, profile, prompt string) error {
	if err := s.checkAgentIfLoaded(agent); err != nil {
		return err
	}
	if s.ens != nil {
		if _, ok := s.ens.Models[profile]; !ok {
			return fmt.Errorf("agent %q is simulated by model profile %q, but the ensemble %q has no such profile", agent, profile, s.ens.Name)
		}
	}
	if strings.TrimSpace(prompt) == "" {
		return errors.New("the simulated user's prompt is empty")
	}
	s.responses.SetSimulate(agent, profile, prompt)
	return nil
}

func (s *Scenario) givenSimulatedDoc(agent, profile string, ds *godog.DocString) error {
	if ds == nil {
		return errors.New("this step needs the prompt in a doc string below it")
	}
	return s.givenSimulated(agent, profile, ds.Content)
}

func (s *Scenario) givenTurnLimit(n int) error {
	if n < 1 {
		return fmt.Errorf("the turn limit must be at least 1, got %d", n)
	}
	s.maxTurns = n
	return nil
}

func (s *Scenario) givenTimeout(d string) error {
	v, err := time.ParseDuration(d)
	if err != nil || v <= 0 {
		return fmt.Errorf("the timeout %s is not a positive duration (write it like 500ms, 5s or 2m)", quote(d))
	}
	s.timeout = v
	return nil
}

func (s *Scenario) givenStrict() error {
	s.strict = true
	return nil
}

func (s *Scenario) givenParallel(n int) error {
	if n < 1 {
		return fmt.Errorf("the parallel limit must be at least 1, got %d", n)
	}
	s.parallel = n
	return nil
}

func (s *Scenario) whenRuns(ctx context.Context) error {
	if s.ran {
		return errors.New("the ensemble already ran in this scenario: start a new scenario for another run")
	}
	_, err := s.Run(ctx)
	return err
}

func (s *Scenario) whenValidated(path string) error {
	s.validated, s.validationErr = false, nil
	if err := s.setFile(path); err != nil {
		return err
	}
	s.validated = true
	s.validationErr = s.load()
	return nil
}

func (s *Scenario) whenInlineValidated(ds *godog.DocString) error {
	s.validated, s.validationErr = false, nil
	if err := s.setInline(ds); err != nil {
		return err
	}
	s.validated = true
	s.validationErr = s.load()
	return nil
}
