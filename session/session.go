// Package session assembles the runs of an ensemble: the one place where a
// loaded ensemble and what a front door decided (ensemble run, resume,
// batch, test, mcp serve, a Temporal worker, a Go program) become the
// runner of every kind of agent, the injected responses in front of it, the
// run's services (secrets, recording, MCP servers, tracer, answers), its
// limits and budget, and the saving of a durable run.
//
// A Session holds what its runs share: the kinds' runners, the MCP servers
// the ensemble names (started by Open, ended by Close), the redactor of the
// profiles' keys. Start and Resume prepare one run each, with what belongs
// to it alone: its events, the answers it is given, its injected
// responses' place, where it is saved. A batch is one session and a run
// per input.
//
//	e, err := session.Load("ensemble.yaml", nil, session.LoadOptions{})
//	s, err := session.Open(ctx, e, session.Options{Models: session.Models{Responses: resp}})
//	if err != nil { … }
//	defer s.Close()
//	r, err := s.Start("the input", session.RunOptions{})
//	res, err := r.Run(ctx)
//
// This package is where a Go program starts, with durable for runs kept
// across processes. It is part of the public API, which the module's
// package documentation lists (go doc github.com/ensemble-run/ensemble);
// docs/development.md describes every package.
package session

import (
	"cmp"
	"context"
	"fmt"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/ensemble-run/ensemble/agent"
	"github.com/ensemble-run/ensemble/agentpath"
	"github.com/ensemble-run/ensemble/engine"
	"github.com/ensemble-run/ensemble/ensemble"
	"github.com/ensemble-run/ensemble/events"
	"github.com/ensemble-run/ensemble/internal/mcptools"
	"github.com/ensemble-run/ensemble/internal/opaque"
	"github.com/ensemble-run/ensemble/internal/responses"
	"github.com/ensemble-run/ensemble/internal/secrets"
	"github.com/ensemble-run/ensemble/kinds"
	"github.com/ensemble-run/ensemble/state"
)

// Session is the runs of one ensemble, and what they share.
type Session struct {
	e        *ensemble.Ensemble
	opts     Options
	dispatch *kinds.Dispatch
	secrets  *secrets.Redactor
	servers  *mcptools.Servers
	simulate func(ctx context.Context, req *agent.Request, modelProfile, prompt string) *agent.Result
	guard    func(agent string) error
	export   *exporting // Options.Tracing.Export's, stopped by Close
}

// Open prepares the runs of e: it checks what the options name against e,
// builds the kinds' runners and starts the MCP servers e's agents name
// (a tool they do not have is an error here, before any run). Close ends
// them.
func Open(ctx context.Context, e *ensemble.Ensemble, opts Options) (*Session, error) {
	lookup := opts.LookupEnv
	if lookup == nil {
		lookup = os.LookupEnv
	}
	export, err := opts.startExport(ctx, lookup)
	if err != nil {
		return nil, err
	}
	s, err := open(ctx, e, opts, lookup)
	if err != nil {
		export.stop()
		return nil, err
	}
	s.export = export
	return s, nil
}

// open is Open once the exporter is set up.
func open(ctx context.Context, e *ensemble.Ensemble, opts Options, lookup func(string) (string, bool)) (*Session, error) {
	for _, name := range opts.Models.Live {
		// An agent, or a child ensemble's by path (`analyst/think`, one
		// instance's `analyst[1]/think`).
		if e.Agent(name) == nil && (!strings.Contains(name, "/") || agentpath.AgentAt(e, name) == nil) {
			return nil, fmt.Errorf("--live: unknown agent %q%s", name, agentpath.SuggestAgent(e, name))
		}
	}
	if err := opts.Models.Responses.Validate(e); err != nil {
		return nil, err
	}
	for _, x := range opts.Checks.Expect {
		if err := e.CheckExpectation(x); err != nil {
			return nil, err
		}
	}
	reg := opts.Kinds
	if reg == nil {
		reg = kinds.Builtin()
	}
	s := &Session{e: e, opts: opts, secrets: secrets.OfEnsemble(e, lookup, opts.Secrets...)}
	reg = reg.With(kinds.Options{Ask: opts.Ask, Stream: opts.Models.Stream})
	s.dispatch = reg.Runner(&agent.Host{LookupEnv: lookup, Environ: opts.Environ, Secrets: opts.Secrets}, opts.Replace)
	s.simulate = opts.Models.Simulate
	if s.simulate == nil {
		s.simulate = s.dispatch.Simulator()
	}
	s.guard = s.liveGuard()
	if err := s.checkKeys(lookup); err != nil {
		return nil, err
	}
	if opts.MCP.Environ == nil {
		opts.MCP.Environ = opts.Environ
	}
	if opts.MCP.Deadline == 0 {
		// The run's timeout bounds the start of its servers too.
		opts.MCP.Deadline = cmp.Or(opts.Limits.Timeout, e.Limits.Timeout, ensemble.DefaultTimeout)
	}
	servers, err := mcptools.Start(ctx, e, mcptools.Options(opts.MCP))
	if err != nil {
		if ctx.Err() != nil {
			return nil, &InterruptedError{Err: err}
		}
		return nil, err
	}
	s.servers = servers
	return s, nil
}

// InterruptedError is an Open cut short by its context (Ctrl-C while an
// MCP server started).
type InterruptedError struct{ Err error }

func (e *InterruptedError) Error() string { return "interrupted: " + e.Err.Error() }
func (e *InterruptedError) Unwrap() error { return e.Err }

// liveGuard is the rule for LLM agents that have no injected response: nil
// lets them call their model.
func (s *Session) liveGuard() func(string) error {
	o := s.opts.Models
	switch {
	case opaque.Get(o.Recording) != nil && !opaque.Get(o.Recording).Live():
		return nil // a replay serves them, offline
	case o.Guard != nil:
		return o.Guard
	case o.Responses == nil || o.LiveAll:
		return nil
	}
	file := o.ResponsesFile
	if file == "" {
		file = "the responses"
	}
	return func(agent string) error {
		// A name without instances (`analyst/think`) lets every
		// instance's child through (`analyst[1]/think`).
		if agentpath.NamesPath(o.Live, agent) {
			return nil
		}
		return fmt.Errorf("agent %q has no responses in %s and would call the real model; add responses for it, or pass --live %s (or --live-all)",
			agent, file, agent)
	}
}

// Close ends the MCP servers. Safe to call more than once.
func (s *Session) Close() error {
	err := s.servers.Close()
	s.export.stop()
	return err
}

// Ensemble is the session's ensemble.
func (s *Session) Ensemble() *ensemble.Ensemble { return s.e }

// Secrets redacts the keys of the ensemble's profiles, as every run of the
// session does: what a front door prints of a run goes through it too.
func (s *Session) Secrets() *agent.Redactor { return s.secrets }

// RunOptions are what one run has of its own.
type RunOptions struct {
	// Events receives the run's events; nil: none (Run.Events pulls them).
	Events events.Sink
	// Answers are the answers given to a run that waits for a person, by
	// agent: each answers its agent's next question, once.
	Answers map[string]string
	// RunID is the run's id, recorded in its spans.
	RunID string
	// Save keeps the run's turns (a durable run, package durable); nil: the
	// run is not saved.
	Save Saver
	// Executor and Clock run the turns' executions elsewhere, on another
	// clock (a Temporal workflow: engine.Options.Executor).
	Executor engine.Executor
	Clock    func() time.Time
	Started  time.Time
	// Now is when a resumed run's questions are checked against their
	// deadlines (an ask agent's timeout:): one passed applies its
	// on_timeout. Zero: the time Resume is called.
	Now time.Time
	// Deadlines are the deadlines of the questions an execution run
	// elsewhere takes (Execute), by agent: one Passed applies its agent's
	// on_timeout, as a resumed run past its deadline does.
	Deadlines map[string]agent.Deadline
}

// Saver keeps the turns of a durable run (package durable implements it).
type Saver interface {
	// Begin is called once the run is prepared, before its first turn,
	// with its state file as it stands: a saver writes it, so that a run
	// killed in its first turn can be resumed.
	Begin(e *ensemble.Ensemble, f *state.File) error
	// Wrap wraps the run's runner: an execution that reaches outside the
	// process may have to wait for the turns before it to be saved.
	Wrap(r agent.Runner) agent.Runner
	// AfterTurn saves a committed turn; an error stops the run.
	AfterTurn(st *state.State) error
	// Finish saves the run as it ended, with its completion reason and
	// what it reported of the turn it cut short (nil: none; never
	// committed: see engine.Run.Stopped), and lets it go.
	Finish(st *state.State, reason string, stopped *state.Stopped) error
	// Abandon lets a run go that was prepared but not run.
	Abandon()
}

// Run is one run of a session.
type Run struct {
	s    *Session
	eng  *engine.Run
	save Saver
	inj  *responses.InjectedRunner
}

// Start prepares a new run with input ("" is the file's input; use
// StartExact for an input that is empty on purpose).
func (s *Session) Start(input string, ro RunOptions) (*Run, error) {
	if input == "" {
		input = s.e.Input
	}
	return s.StartExact(input, ro)
}

// StartExact prepares a new run whose input is input, even when empty.
func (s *Session) StartExact(input string, ro RunOptions) (*Run, error) {
	r := s.newRun(ro)
	r.eng = engine.Resume(s.e, state.New(s.secrets.String(input)), r.engineOptions(ro))
	return r, r.begin()
}

// Resume prepares a run that goes on from f, a run saved after a completed
// turn: its interrupted turn runs again, a completed one never does, and
// injected responses go on where they were. The overrides f holds apply
// unless the session's options set their own. f must fit the ensemble
// (engine.CheckState); whether the ensemble file changed since is the
// front door's to check (engine.CheckEnsemble).
func (s *Session) Resume(f *state.File, ro RunOptions) (*Run, error) {
	if err := engine.CheckState(s.e, f); err != nil {
		if ro.Save != nil {
			ro.Save.Abandon()
		}
		return nil, err
	}
	r := s.newRun(ro)
	if r.inj != nil {
		r.inj.Resume(f.State.History()) // responses by path go on where they were
	}
	o := r.engineOptions(ro)
	now := ro.Now
	if now.IsZero() {
		now = time.Now()
	}
	o.Answers = o.Answers.WithDeadlines(engine.AnswerDeadlines(f, now))
	r.eng = engine.FromFile(s.e, f, o)
	return r, r.begin()
}

// Execute runs one execution of a run that plays its turns elsewhere (a
// Temporal workflow's activity, docs/temporal.md): as a run of the session
// runs it (the agent's timeout and retries, panics caught, what it returns
// redacted), with the session's services and ro's answers, and no budget.
func (s *Session) Execute(ctx context.Context, req *agent.Request, ro RunOptions) *agent.Result {
	r := s.newRun(ro)
	o := r.engineOptions(ro)
	o.Answers = o.Answers.WithDeadlines(ro.Deadlines)
	return engine.Execute(ctx, s.e, o, req)
}

// newRun is a run with its runner: the kinds', behind this run's own
// injected responses (each run takes them from the first), behind its
// saver's barrier.
func (s *Session) newRun(ro RunOptions) *Run {
	r := &Run{s: s, save: ro.Save}
	if s.opts.Models.Responses != nil || s.guard != nil {
		r.inj = responses.Injected(s.opts.Models.Responses, s.dispatch)
		r.inj.Simulate = s.simulate
		r.inj.Live = s.guard
	}
	return r
}

func (r *Run) engineOptions(ro RunOptions) engine.Options {
	s := r.s
	var run agent.Runner = s.dispatch
	if r.inj != nil {
		run = r.inj
	}
	if r.save != nil {
		run = r.save.Wrap(run)
	}
	o := engine.Options{
		Runner:       run,
		MaxTurns:     s.opts.Limits.MaxTurns,
		Timeout:      s.opts.Limits.Timeout,
		Parallel:     s.opts.Limits.Parallel,
		Budget:       s.opts.Limits.Budget,
		Strict:       s.opts.Checks.Strict,
		Events:       ro.Events,
		Secrets:      s.secrets,
		Recording:    s.opts.Models.Recording,
		Answers:      agent.NewAnswers(ro.Answers),
		Tracer:       s.opts.Tracing.Tracer,
		TraceContent: s.opts.Tracing.Content,
		RunID:        ro.RunID,
		Executor:     ro.Executor,
		Clock:        ro.Clock,
		Started:      ro.Started,
		Expect:       s.expect(),
	}
	if s.servers != nil {
		o.Tools = s.servers
	}
	if r.save != nil {
		o.AfterTurn = r.save.AfterTurn
	}
	return o
}

// expect are the expectations of the session's runs: the file's, then the
// front door's.
func (s *Session) expect() []*ensemble.Expectation {
	if len(s.opts.Checks.Expect) == 0 {
		return s.e.Expect
	}
	return append(slices.Clip(s.e.Expect), s.opts.Checks.Expect...)
}

// begin has the saver write the run as it stands.
func (r *Run) begin() error {
	if r.save == nil {
		return nil
	}
	if err := r.save.Begin(r.s.e, r.eng.File("")); err != nil {
		r.save.Abandon()
		return err
	}
	return nil
}

// Run drives the run to its end, saves it as it ended when it is durable,
// and returns its result. err is the failure of that final save: the
// result stands, but the saved run is a turn or more behind it.
func (r *Run) Run(ctx context.Context) (*engine.Result, error) {
	res := r.eng.Run(ctx)
	return res, r.finish(res)
}

func (r *Run) finish(res *engine.Result) error {
	if r.save == nil {
		return nil
	}
	err := r.save.Finish(r.eng.State(), res.CompletionReason, r.eng.Stopped())
	r.save = nil
	return err
}

// Abandon lets go of a run that was prepared and will not run (its saver's
// lock, a durable run's database).
func (r *Run) Abandon() {
	if r.save != nil {
		r.save.Abandon()
		r.save = nil
	}
}

// Engine is the run's engine: to drive it turn by turn (Step), or read its
// state, its state file and what it waits for between turns.
func (r *Run) Engine() *engine.Run { return r.eng }

// State is the run's state; read it only between turns.
func (r *Run) State() *state.State { return r.eng.State() }

// File is the run's state file as it stands, with reason as its completion
// reason ("" while it goes on).
func (r *Run) File(reason string) *state.File { return r.eng.File(reason) }
