package llm

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/ensemble-run/ensemble/agent"
	"github.com/ensemble-run/ensemble/ensemble"
	"github.com/ensemble-run/ensemble/internal/tracing"
	"github.com/ensemble-run/ensemble/state"
)

// route is where one execution's model requests go: the agent's profile,
// then its fallbacks in order (docs/llm.md#fallbacks). Once a fallback has
// answered, the execution's later requests go to it: the conversation goes
// on there with the same messages.
type route struct {
	r        *Runner
	profiles []*ensemble.ModelProfile
	at       int // the profile requests go to now
	budget   agent.Budget
	// used names the profile that answered the last request when it is a
	// fallback; "" while the agent's own answers.
	used string
	// rec records or replays the requests when the run has a recording.
	rec *recorder
	// sec redacts what a span records, and tr makes the spans (trace.go;
	// nil when tracing is off).
	sec *secrets
	tr  *tracing.Tracer
	// onRequest is told of every request made (calltrace.go): the
	// profile, the reply or error, and how long it took.
	onRequest func(p *ensemble.ModelProfile, resp *ChatResponse, u *state.Usage, err error, d time.Duration)
}

func (r *Runner) newRoute(ens *ensemble.Ensemble, p *ensemble.ModelProfile, b agent.Budget) *route {
	rt := &route{r: r, profiles: []*ensemble.ModelProfile{p}, budget: b}
	for _, name := range p.Fallback {
		if fp := ens.Models[name]; fp != nil && fp != p {
			rt.profiles = append(rt.profiles, fp)
		}
	}
	return rt
}

// chat makes one model request: through the budget, to the current
// profile, and on to the next profile when it fails without an answer
// (after its retries: a 5xx, a timeout or a connection error; never
// a 4xx). It returns the reply and what it used, cost included at the
// pricing of the profile that answered.
func (rt *route) chat(ctx context.Context, req *ChatRequest) (*ChatResponse, *state.Usage, error) {
	var errs []error
	for ; rt.at < len(rt.profiles); rt.at++ {
		p := rt.profiles[rt.at]
		// A recording answers first (docs/recording.md); a miss fails
		// without falling back.
		recorded, rec, err := rt.rec.replay(p, req)
		if err != nil {
			return nil, nil, errors.Join(append(errs, err)...)
		}
		var prov Provider
		if rec == nil {
			if prov, err = rt.r.provider(p); err != nil {
				if len(errs) == 0 {
					return nil, nil, err
				}
				errs = append(errs, fmt.Errorf("fallback %q: %w", p.Name, err))
				continue
			}
		}
		done := func(*state.Usage) {}
		if rt.budget != nil {
			if done, err = rt.budget.Reserve(); err != nil {
				return nil, nil, errors.Join(append(errs, err)...)
			}
		}
		cctx, span, tr := startChat(ctx, rt.tr, p, req, rt.sec)
		began := time.Now()
		var resp *ChatResponse
		if rec != nil {
			if resp, err = replayedResponse(rec); err == nil && req.OnText != nil && resp.Text != "" {
				req.OnText(resp.Text)
			}
		} else {
			resp, err = prov.Chat(cctx, req)
			if rerr := rt.rec.record(ctx, recorded, resp, err); rerr != nil {
				if span != nil {
					endChat(span, tr, resp, rerr, rt.sec)
				}
				done(nil)
				return nil, nil, errors.Join(append(errs, rerr)...)
			}
		}
		if span != nil {
			endChat(span, tr, resp, err, rt.sec)
		}
		var u *state.Usage
		if err == nil {
			u = &state.Usage{Requests: 1, InputTokens: resp.InputTokens, OutputTokens: resp.OutputTokens}
			u.Cost = p.Pricing.Cost(u.InputTokens, u.OutputTokens)
		}
		if rt.onRequest != nil {
			rt.onRequest(p, resp, u, err, time.Since(began))
		}
		if err != nil {
			done(nil)
			if rt.at > 0 {
				err = fmt.Errorf("fallback %q: %w", p.Name, err)
			}
			errs = append(errs, err)
			if ctx.Err() != nil || !fallsBack(err) {
				return nil, nil, errors.Join(errs...)
			}
			continue
		}
		done(u)
		rt.used = ""
		if rt.at > 0 {
			rt.used = p.Name
		}
		return resp, u, nil
	}
	// Every profile failed: the next request starts again from the last.
	rt.at = len(rt.profiles) - 1
	return nil, nil, errors.Join(errs...)
}

// fallsBack reports whether a failed request goes on to the next profile:
// a server error (5xx) or no answer at all (a connection error, a
// timeout), never a 4xx, which another profile would refuse alike or
// which is the caller's to fix.
func fallsBack(err error) bool {
	var pe *providerError
	if !errors.As(err, &pe) {
		return false
	}
	return pe.status >= 500 || (pe.status == 0 && pe.unreachable)
}
