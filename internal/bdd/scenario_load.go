package bdd

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/cucumber/godog"

	"github.com/ensemble-run/ensemble/agentpath"
	"github.com/ensemble-run/ensemble/ensemble"
	"github.com/ensemble-run/ensemble/session"
)

// setFile names the ensemble file of the scenario: it must exist.
func (s *Scenario) setFile(path string) error {
	if strings.TrimSpace(path) == "" {
		return errors.New(`the ensemble path is empty`)
	}
	s.ensLabel, s.ensPath, s.inline = quote(path), s.Resolve(path), nil
	if _, err := os.Stat(s.ensPath); err != nil {
		s.ens, s.loadErr = nil, nil
		if os.IsNotExist(err) {
			return fmt.Errorf("the ensemble %s does not exist (looked for %s)", quote(path), s.ensPath)
		}
		return fmt.Errorf("the ensemble %s cannot be read: %v", quote(path), err)
	}
	return nil
}

// setInline names the ensemble given in the step's doc string.
func (s *Scenario) setInline(ds *godog.DocString) error {
	if ds == nil {
		return errors.New("this step needs the ensemble's YAML in a doc string below it")
	}
	s.ensLabel, s.ensPath, s.inline = "in the doc string", "", []byte(ds.Content)
	s.inlineFile, s.inlineLine = s.FeatureFile(), 0
	if s.inlineFile != "" && s.step != nil {
		s.inlineLine = docStringLine(s.inlineFile, s.step.Text, ds.Content)
	}
	return nil
}

// load (re)loads the ensemble the scenario names, and keeps why it failed.
func (s *Scenario) load() *loadFailure {
	s.ens, s.loadErr = nil, nil
	path, data := s.ensPath, []byte(nil)
	if s.inline != nil {
		path, data = filepath.Join(s.dir, "inline-ensemble.yaml"), s.inline
	}
	e, err := session.Load(path, data, session.LoadOptions{Kinds: s.kinds(), Profiles: s.profileFiles(), LookupEnv: s.lookupEnv})
	if err != nil {
		s.loadErr = loadError(s.ensLabel, s.inline != nil, err)
		if s.inline != nil {
			s.loadErr.placeInline(s.inlineFile, s.inlineLine, err)
		}
		return s.loadErr
	}
	s.ens = e
	return nil
}

// loadFailure is a load failure: every problem, one per line.
type loadFailure struct {
	label    string
	invalid  bool     // the file was read, and has problems
	problems []string // each FILE:LINE:COL: message, or doc string line L, column C: message
}

func (e *loadFailure) Error() string {
	if !e.invalid {
		return fmt.Sprintf("the ensemble %s cannot be loaded: %s", e.label, e.problems[0])
	}
	return fmt.Sprintf("the ensemble %s is invalid:\n  %s", e.label, strings.Join(e.problems, "\n  "))
}

// loadError phrases a load failure.
func loadError(label string, inline bool, err error) *loadFailure {
	var list *ensemble.ErrorList
	if !errors.As(err, &list) {
		return &loadFailure{label: label, problems: []string{err.Error()}}
	}
	lines := make([]string, len(*list))
	for i, e := range *list {
		if inline && e.Line > 0 {
			lines[i] = fmt.Sprintf("doc string line %d, column %d: %s", e.Line, e.Column, e.Message)
		} else {
			lines[i] = e.Error()
		}
	}
	return &loadFailure{label: label, invalid: true, problems: lines}
}

// placeInline starts each problem of an ensemble of a doc string with its
// place in the feature file, FILE:LINE, when the doc string is found there
// (at its opening line): "a.feature:17: doc string line 4, column 13: ...".
func (e *loadFailure) placeInline(file string, at int64, err error) {
	var list *ensemble.ErrorList
	if !e.invalid || !errors.As(err, &list) || len(*list) != len(e.problems) {
		return
	}
	for i, pe := range *list {
		if pe.Line > 0 {
			e.problems[i] = docStringPlace(file, at, pe.Line) + e.problems[i]
		}
	}
}

// ensemble returns the loaded ensemble, or an error naming the missing step.
func (s *Scenario) ensemble() (*ensemble.Ensemble, error) {
	if s.loadErr != nil {
		return nil, s.loadErr
	}
	if s.ens == nil {
		return nil, errors.New(`no ensemble is loaded: start the scenario with Given the ensemble "path/to/ensemble.yaml"`)
	}
	return s.ens, nil
}

// agent checks that name is an agent of the ensemble.
func (s *Scenario) agent(name string) (*ensemble.Agent, error) {
	e, err := s.ensemble()
	if err != nil {
		return nil, err
	}
	if a := e.Agent(name); a != nil {
		return a, nil
	}
	if a, ok := instanceAgent(e, name); ok { // name[i] of a fan-out agent
		return a, nil
	}
	if a := agentpath.AgentAt(e, name); a != nil { // a child ensemble's agent, by path
		return a, nil
	}
	return nil, unknownAgent(e, name)
}

func unknownAgent(e *ensemble.Ensemble, name string) error {
	names := make([]string, len(e.Agents))
	for i, a := range e.Agents {
		names[i] = a.Name
	}
	return fmt.Errorf("the ensemble %q has no agent %q (its agents: %s)%s", e.Name, name, strings.Join(names, ", "), agentpath.SuggestAgent(e, name))
}

// checkResponses checks that every agent given responses exists.
func (s *Scenario) checkResponses() error {
	e, err := s.ensemble()
	if err != nil {
		return err
	}
	for _, name := range s.responses.Agents() {
		if _, err := s.agent(name); err != nil { // an agent, or an instance of a fan-out agent
			return fmt.Errorf("responses are given for agent %q, but %w", name, unknownAgent(e, name))
		}
	}
	if err := s.checkSimulators(e); err != nil {
		return err
	}
	return s.responses.Validate(e)
}
