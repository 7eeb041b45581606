package bdd

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/cucumber/godog"

	"github.com/ensemble-run/ensemble/engine"
	"github.com/ensemble-run/ensemble/session"
)

// A scenario is a durable run with no terminal
// (docs/testing.md#questions-that-wait): an ask agent with no injected
// response waits for input, and the run ends awaiting_input; `When
// "reviewer" answers "..."` resumes it with that answer, as `ensemble
// resume --answer` would: the ask kind's own runner takes it.

// pendingAgents names what the run waits for.
func pendingAgents(res *engine.Result) []string {
	var names []string
	for _, p := range res.PendingInput {
		names = append(names, p.Agent)
	}
	return names
}

func (s *Scenario) thenWaitingFor(name string) error {
	res, err := s.ranResult()
	if err != nil {
		return err
	}
	if err := s.checkAgentIfLoaded(name); err != nil {
		return err
	}
	if res.CompletionReason != engine.AwaitingInput {
		return fmt.Errorf("the run is not waiting for input: its completion reason is %q%s", res.CompletionReason, s.errorsNote())
	}
	if names := pendingAgents(res); !slices.Contains(names, name) {
		return fmt.Errorf("the run waits for input from %s, not from %q", strings.Join(names, ", "), name)
	}
	return nil
}

func (s *Scenario) whenAnswers(ctx context.Context, name, text string) error {
	return s.answer(ctx, name, unq(text))
}

func (s *Scenario) whenAnswersDoc(ctx context.Context, name string, ds *godog.DocString) error {
	return s.answer(ctx, name, ds.Content)
}

// answer resumes a run that waits for name's answer with it.
func (s *Scenario) answer(ctx context.Context, name, text string) error {
	if !s.ran || s.run == nil {
		return errors.New(`nothing to answer: the ensemble has not run (When the ensemble runs comes first)`)
	}
	res := s.result
	if res.CompletionReason != engine.AwaitingInput || !slices.Contains(pendingAgents(res), name) {
		why := fmt.Sprintf("its completion reason is %q", res.CompletionReason)
		if res.CompletionReason == engine.AwaitingInput {
			why = "it waits for " + strings.Join(pendingAgents(res), ", ")
		}
		return fmt.Errorf("agent %q is not waiting for input (%s)", name, why)
	}
	saved := s.run.File(res.CompletionReason)
	_, err := s.runSession(ctx, true, func(sess *session.Session, ro session.RunOptions) (*session.Run, error) {
		ro.Answers = map[string]string{name: text}
		return sess.Resume(saved, ro)
	})
	return err
}
