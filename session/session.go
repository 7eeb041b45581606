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
//	s, err := session.Open(ctx, e, session.Options{Responses: resp})
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
	"io"
	"os"
	"slices"
	"strings"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/ensemble-run/ensemble/agent"
	"github.com/ensemble-run/ensemble/agentpath"
	"github.com/ensemble-run/ensemble/engine"
	"github.com/ensemble-run/ensemble/ensemble"
	"github.com/ensemble-run/ensemble/events"
	"github.com/ensemble-run/ensemble/internal/cassette"
	"github.com/ensemble-run/ensemble/internal/mcptools"
	"github.com/ensemble-run/ensemble/internal/responses"
	"github.com/ensemble-run/ensemble/internal/secrets"
	"github.com/ensemble-run/ensemble/kinds"
	"github.com/ensemble-run/ensemble/state"
)

// Options are what a front door decides for the runs of a session. The
// zero value runs every agent for real, with the process's environment and
// no terminal: an LLM agent calls its model, an ask agent fails.
type Options struct {
	// Kinds are the kinds of agent; nil is kinds.Builtin(). The ensemble
	// must have been loaded with them.
	Kinds *kinds.Registry
	// Replace replaces the runners of kinds, by kind name: a test's fake
	// model, or a test's person.
	Replace map[string]agent.Runner

	// LookupEnv finds API keys and the variables of the profiles; nil is
	// os.LookupEnv. Environ is the environment scripts and MCP servers
	// inherit (less every api_key_env variable); nil is os.Environ.
	LookupEnv func(string) (string, bool)
	Environ   func() []string

	// The terminal ask agents ask on: In and Out, and Interactive when In
	// is one. NoInput never asks there (--no-input).
	In          io.Reader
	Out         io.Writer
	Interactive bool
	NoInput     bool
	// Suspend lets a run wait for an answer: an ask agent with no answer
	// ends it awaiting_input instead of failing
	// (docs/semantics.md#ask-agents-that-wait). Durable runs and tests set
	// it.
	Suspend bool
	// Batch marks the runs of a batch, whose ask agents never ask nor wait.
	Batch bool
	// Stream streams model replies as text_delta events.
	Stream bool

	// Responses are injected: an agent with responses takes them instead of
	// running (docs/testing.md#the-responses-file). ResponsesFile names
	// them in messages.
	Responses     *responses.Responses
	ResponsesFile string
	// With Responses, an LLM agent that has none fails instead of calling
	// its model (a real model costs money), unless Live names it or
	// LiveAll is set. Guard, when set, is the error it fails with (its
	// agent's name given), and guards the models even without Responses.
	Live    []string
	LiveAll bool
	Guard   func(agent string) error
	// Simulate plays simulated users (responses {simulate: ...}); nil is the
	// LLM kind's runner.
	Simulate func(ctx context.Context, req *agent.Request, modelProfile, prompt string) *agent.Result

	// Recording records or replays model exchanges and answers
	// (docs/recording.md); a replay's agents need no Live.
	Recording *cassette.Cassette
	// MCP tunes the start of the MCP servers the agents name.
	MCP mcptools.Options

	// MaxTurns, Timeout and Parallel override conversation_limits when > 0;
	// Budget overrides the caps the file sets.
	MaxTurns int
	Timeout  time.Duration
	Parallel int
	Budget   *ensemble.Budget
	// Strict ends a run strict_warning (exit 7) on a read of a missing
	// key or a null message (--strict; docs/semantics.md#reads-of-missing-keys).
	Strict bool

	// Tracer makes spans of the runs (docs/tracing.md), with their content
	// when TraceContent is set; nil traces nothing.
	Tracer       trace.Tracer
	TraceContent bool

	// Expect are expectations the runs check when they complete, after
	// the file's own expect: (docs/semantics.md#expectations): a
	// command's --expect, compiled by ensemble.CompileExpectation.
	Expect []*ensemble.Expectation
}

// Session is the runs of one ensemble, and what they share.
type Session struct {
	e        *ensemble.Ensemble
	opts     Options
	dispatch *kinds.Dispatch
	secrets  *secrets.Redactor
	servers  *mcptools.Servers
	simulate func(ctx context.Context, req *agent.Request, modelProfile, prompt string) *agent.Result
	guard    func(agent string) error
}

// Open prepares the runs of e: it checks what the options name against e,
// builds the kinds' runners and starts the MCP servers e's agents name
// (a tool they do not have is an error here, before any run). Close ends
// them.
func Open(ctx context.Context, e *ensemble.Ensemble, opts Options) (*Session, error) {
	for _, name := range opts.Live {
		// An agent, or a child ensemble's by path (`analyst/think`, one
		// instance's `analyst[1]/think`).
		if e.Agent(name) == nil && (!strings.Contains(name, "/") || agentpath.AgentAt(e, name) == nil) {
			return nil, fmt.Errorf("--live: unknown agent %q%s", name, agentpath.SuggestAgent(e, name))
		}
	}
	if err := opts.Responses.Validate(e); err != nil {
		return nil, err
	}
	for _, x := range opts.Expect {
		if err := e.CheckExpectation(x); err != nil {
			return nil, err
		}
	}
	reg := opts.Kinds
	if reg == nil {
		reg = kinds.Builtin()
	}
	lookup := opts.LookupEnv
	if lookup == nil {
		lookup = os.LookupEnv
	}
	s := &Session{e: e, opts: opts, secrets: secrets.Of(e.Models, lookup)}
	s.dispatch = reg.Runner(&agent.Host{
		LookupEnv:   lookup,
		Environ:     opts.Environ,
		Stream:      opts.Stream,
		In:          opts.In,
		Out:         opts.Out,
		Interactive: opts.Interactive,
		Suspend:     opts.Suspend,
		NoInput:     opts.NoInput,
		Batch:       opts.Batch,
	}, opts.Replace)
	s.simulate = opts.Simulate
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
		opts.MCP.Deadline = cmp.Or(opts.Timeout, e.Limits.Timeout, ensemble.DefaultTimeout)
	}
	servers, err := mcptools.Start(ctx, e, opts.MCP)
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
	o := s.opts
	switch {
	case o.Recording != nil && !o.Recording.Live():
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
func (s *Session) Close() error { return s.servers.Close() }

// Ensemble is the session's ensemble.
func (s *Session) Ensemble() *ensemble.Ensemble { return s.e }

// Secrets redacts the keys of the ensemble's profiles, as every run of the
// session does: what a front door prints of a run goes through it too.
func (s *Session) Secrets() *secrets.Redactor { return s.secrets }

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
	return engine.Execute(ctx, s.e, r.engineOptions(ro), req)
}

// newRun is a run with its runner: the kinds', behind this run's own
// injected responses (each run takes them from the first), behind its
// saver's barrier.
func (s *Session) newRun(ro RunOptions) *Run {
	r := &Run{s: s, save: ro.Save}
	if s.opts.Responses != nil || s.guard != nil {
		r.inj = responses.Injected(s.opts.Responses, s.dispatch)
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
		MaxTurns:     s.opts.MaxTurns,
		Timeout:      s.opts.Timeout,
		Parallel:     s.opts.Parallel,
		Budget:       s.opts.Budget,
		Strict:       s.opts.Strict,
		Events:       ro.Events,
		Secrets:      s.secrets,
		Recording:    s.opts.Recording,
		Answers:      agent.NewAnswers(ro.Answers),
		Tracer:       s.opts.Tracer,
		TraceContent: s.opts.TraceContent,
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
	if len(s.opts.Expect) == 0 {
		return s.e.Expect
	}
	return append(slices.Clip(s.e.Expect), s.opts.Expect...)
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
