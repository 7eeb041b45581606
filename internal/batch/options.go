package batch

import (
	"github.com/ensemble-run/ensemble/ensemble"
	"github.com/ensemble-run/ensemble/internal/responses"
	"github.com/ensemble-run/ensemble/kinds/ask"
	"github.com/ensemble-run/ensemble/session"
)

// SessionOptions are the options of the runs of the batch spec keeps, of
// e (its ensemble as it loads now): its limits and budget, its injected
// responses, its live agents; an ask agent of a batch never asks nor
// waits (ask.Options.Batch). A front door adds its own (LookupEnv, the
// terminal ask agents write to).
func (spec *Spec) SessionOptions(e *ensemble.Ensemble) (session.Options, error) {
	o := spec.Options
	opts := session.Options{
		Ask:    ask.Options{Batch: true},
		Models: session.Models{Live: spec.Live, LiveAll: spec.LiveAll},
		Limits: session.Limits{MaxTurns: o.MaxTurns, Timeout: o.Timeout(), Parallel: o.Parallel},
	}
	if b := (ensemble.Budget{MaxTokens: o.MaxTokens, MaxRequests: o.MaxRequests, MaxCost: o.MaxCost}); !b.Empty() {
		opts.Limits.Budget = &b
	}
	if spec.Responses != nil {
		resp, err := responses.LoadResponsesFor(spec.Responses.Path, e)
		if err != nil {
			return opts, err
		}
		opts.Models.Responses, opts.Models.ResponsesFile = resp, spec.Responses.Path
	}
	return opts, nil
}
