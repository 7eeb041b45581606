//go:build !notemporal

package temporalengine

import (
	"fmt"

	"github.com/ensemble-run/ensemble/agent"
	"github.com/ensemble-run/ensemble/ensemble"
)

// Supported refuses an ensemble the Temporal engine would not run as the
// local engine does: one with a budget (conversation_limits' max_tokens,
// max_requests or max_cost, or an agent's budget, here or in a child
// ensemble). Each execution is an activity of its own, which the workflow
// cannot cap mid-turn, so a budget would silently not hold.
func Supported(e *ensemble.Ensemble) error {
	var err error
	agent.Walk(e, func(f *ensemble.Ensemble, a *ensemble.Agent) {
		switch {
		case err != nil:
		case f.Limits.Budget != nil && !f.Limits.Budget.Empty():
			err = fmt.Errorf("a run on Temporal has no budget (each execution is an activity, not capped mid-turn), and %s sets one in conversation_limits: run it without --temporal", f.Path)
		case a.Budget != nil && !a.Budget.Empty():
			err = fmt.Errorf("a run on Temporal has no budget (each execution is an activity, not capped mid-turn), and agent %q of %s has one: run it without --temporal", a.Name, f.Path)
		}
	})
	return err
}
