package bdd

import (
	"errors"
	"fmt"
	"strings"
)

// The Then steps after a validated step.

func (s *Scenario) validation() error {
	if !s.validated {
		return errors.New(`nothing was validated: add When the ensemble "path" is validated before this step`)
	}
	return nil
}

func (s *Scenario) thenValid() error {
	if err := s.validation(); err != nil {
		return err
	}
	if s.validationErr != nil {
		return fmt.Errorf("want a valid ensemble, but %v", s.validationErr)
	}
	return nil
}

func (s *Scenario) thenInvalid(sub string) error {
	sub = unq(sub)
	if err := s.validation(); err != nil {
		return err
	}
	if s.validationErr == nil {
		return fmt.Errorf("the ensemble %s is valid, want it rejected with an error containing %s", s.ensLabel, quote(sub))
	}
	for _, p := range s.validationErr.problems {
		if strings.Contains(p, sub) {
			return nil
		}
	}
	return fmt.Errorf("no problem contains %s; the problems:\n  %s", quote(sub), strings.Join(s.validationErr.problems, "\n  "))
}

func (s *Scenario) thenKind(name, kind string) error {
	if s.validated && s.validationErr != nil {
		return fmt.Errorf("cannot check agent %q: %v", name, s.validationErr)
	}
	a, err := s.agent(name)
	if err != nil {
		return err
	}
	// Kinds are named in lower case ("llm"); prose may write "LLM".
	if a.Kind == nil || !strings.EqualFold(a.Kind.String(), kind) {
		have := "no"
		if a.Kind != nil {
			have = kindArticle(a.Kind.String())
		}
		return fmt.Errorf("agent %q is %s agent, want %s agent", name, have, kindArticle(kind))
	}
	return nil
}

// kindArticle is a kind's name with its article, as prose writes it:
// "an LLM", "a script", "an ask".
func kindArticle(kind string) string {
	if strings.EqualFold(kind, "llm") {
		return "an LLM"
	}
	if kind != "" && strings.ContainsRune("aeiouAEIOU", rune(kind[0])) {
		return "an " + kind
	}
	return "a " + kind
}
