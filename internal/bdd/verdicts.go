package bdd

import (
	"os"

	"github.com/ensemble-run/ensemble/internal/secrets"
	"github.com/ensemble-run/ensemble/store"
)

// The verdicts of a scenario run's judge steps, saved with its result in
// a test run saved (`test --state`, docs/testing.md#judge-review), for a
// person to accept or override in the inspector and `test calibrate` to
// hold the judge to.

// verdictsOf are the verdicts of the judge steps that scored: a step whose
// judge gave no score has none.
func verdictsOf(checks []judgeCheck) []*store.Verdict {
	out := make([]*store.Verdict, 0, len(checks))
	for _, c := range checks {
		out = append(out, &store.Verdict{Judge: c.judge, Agent: c.agent, Step: c.step, Rubric: c.rubric,
			Score: c.score, Threshold: c.min, Scale: c.scale, Passed: c.passed, Reason: c.reason})
	}
	return out
}

// redacted is text with the API keys of the scenario's model profiles
// redacted, as the runs' records are: a judge's reason, which a test run
// saved keeps, may quote what it was shown.
func (s *Scenario) redacted(text string) string {
	lookup := s.opts.LookupEnv
	if lookup == nil {
		lookup = os.LookupEnv
	}
	return secrets.OfEnsemble(s.ens, lookup).String(text)
}
