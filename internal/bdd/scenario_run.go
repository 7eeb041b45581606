package bdd

import (
	"context"
	"errors"
	"fmt"

	"github.com/ensemble-run/ensemble/agent"
	"github.com/ensemble-run/ensemble/agentpath"
	"github.com/ensemble-run/ensemble/engine"
	"github.com/ensemble-run/ensemble/internal/cassette"
	"github.com/ensemble-run/ensemble/internal/opaque"
	"github.com/ensemble-run/ensemble/kinds"
	"github.com/ensemble-run/ensemble/kinds/ask"
	"github.com/ensemble-run/ensemble/session"
)

// ranResult returns the result, or an error when the ensemble has not run.
func (s *Scenario) ranResult() (*engine.Result, error) {
	if !s.ran {
		return nil, errors.New("the ensemble has not run yet: add When the ensemble runs before this step")
	}
	return s.result, nil
}

// Run runs the ensemble with what the steps gave: what `When the ensemble
// runs` does. A scenario's run is assembled as every run is (package
// session): it can wait for an answer, as a durable run with no terminal
// does (answers.go).
func (s *Scenario) Run(ctx context.Context) (*engine.Result, error) {
	e, err := s.ensemble()
	if err != nil {
		return nil, err
	}
	if err := s.checkResponses(); err != nil {
		return nil, err
	}
	s.opts.live.mark(s)
	input := e.Input
	if s.input != nil {
		input = *s.input // an explicit empty input stays empty
	}
	return s.runSession(ctx, false, func(sess *session.Session, ro session.RunOptions) (*session.Run, error) {
		return sess.StartExact(input, ro)
	})
}

// runSession runs the run start prepares in a session of the scenario's
// options, with the MCP servers its agents name, started for the run and
// ended with it, as ensemble run does (docs/llm.md#mcp-tools). In a
// test run that is saved, the run is saved (resume: it goes on).
func (s *Scenario) runSession(ctx context.Context, resume bool, start func(*session.Session, session.RunOptions) (*session.Run, error)) (*engine.Result, error) {
	opts, err := s.sessionOptions()
	if err != nil {
		return nil, err
	}
	sess, err := session.Open(ctx, s.ens, opts)
	if err != nil {
		return nil, err
	}
	defer sess.Close()
	ro, err := s.saveOptions(resume)
	if err != nil {
		return nil, fmt.Errorf("test --state: the run cannot be saved: %w", err)
	}
	r, err := start(sess, ro)
	if err != nil {
		if ro.Save != nil {
			ro.Save.Abandon()
		}
		return nil, err
	}
	res, err := r.Run(ctx)
	if err != nil {
		return nil, err
	}
	s.run, s.result, s.ran = r, res, true
	return res, nil
}

// sessionOptions are the options of the scenario's runs: its responses,
// recording and limits, a test's runners in place of a terminal and (unless
// Options.LLM gives one) of the models.
func (s *Scenario) sessionOptions() (session.Options, error) {
	opts := session.Options{
		Kinds:     s.kinds(),
		Replace:   s.replaced(),
		LookupEnv: s.opts.LookupEnv,
		Ask:       ask.Options{Suspend: true},
		Models: session.Models{
			Responses: s.responses,
			LiveAll:   true, // unless GuardModels, below
			Simulate:  s.opts.Simulate,
		},
		Limits:  session.Limits{MaxTurns: s.maxTurns, Timeout: s.timeout, Parallel: s.parallel},
		Checks:  session.Checks{Strict: s.strict},
		Tracing: session.Tracing{Tracer: s.opts.Tracer, Content: s.opts.TraceContent},
	}
	if s.recording != "" { // the kinds' own runners replay, offline
		mode := cassette.Replay
		if s.opts.RecordMissing {
			mode = cassette.RecordMissing
		}
		c, err := cassette.Open(cassette.Options{Dir: s.recording, Mode: mode})
		if err != nil {
			return opts, err
		}
		s.cassettes = append(s.cassettes, c)
		opts.Models.Recording, opts.Models.Simulate = opaque.Make[agent.Recording](c), nil
	}
	if s.opts.GuardModels && (s.recording == "" || s.opts.RecordMissing) {
		opts.Models.Guard = func(agent string) error {
			if s.opts.LiveAll || agentpath.NamesPath(s.opts.Live, agent) {
				return nil // test --live
			}
			if s.respFile == "" {
				return fmt.Errorf(`agent %q has no injected response and would call the real model; give it one: Given agent %q responds "..."`, agent, agent)
			}
			return fmt.Errorf("agent %q has no responses in %s and would call the real model; add responses for it", agent, s.respFile)
		}
	}
	return opts, nil
}

// kinds are the kinds of agent the scenarios know: Options.Kinds, or the
// built-in ones.
func (s *Scenario) kinds() *kinds.Registry {
	if s.opts.Kinds != nil {
		return s.opts.Kinds
	}
	return kinds.Builtin()
}

// replaced are the runners that replace a kind's own in a test: a test has
// no model for the kinds that reach one unless Options.LLM gives one or
// Options.Models lets the kinds' own reach it (a recording replays through
// the kinds' own). The kinds that ask a person
// have no terminal, and wait (answers.go).
func (s *Scenario) replaced() map[string]agent.Runner {
	llm := s.opts.LLM
	if llm == nil {
		llm = agent.RunnerFunc(noLLM)
	}
	own := s.recording != "" || s.opts.LLM == nil && s.opts.Models
	r := map[string]agent.Runner{}
	for _, k := range s.kinds().Kinds() {
		if agent.IsGuarded(k) && !own {
			r[k.String()] = llm
		}
	}
	if s.opts.Script != nil {
		r["script"] = s.opts.Script
	}
	s.askRunners(r)
	return r
}

func noLLM(_ context.Context, req *agent.Request) *agent.Result {
	n := req.Agent.Name
	return &agent.Result{Err: fmt.Errorf("agent %q is an LLM agent with no injected response, and no model provider is available: give it one with Given agent %q responds \"...\"", n, n)}
}
