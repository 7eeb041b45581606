// Package bdd is the Gherkin step library of `ensemble test`: the
// built-in steps that load an ensemble, inject responses, run it and assert
// on the result, and Run, which runs feature files with them through godog.
//
// Every scenario gets a fresh Scenario: its own ensemble, input, injected
// responses (queued per agent in the order the steps give them) and result.
// Relative paths in steps resolve against the folder of the feature file.
//
// A project's own godog suite can reuse the steps: call Register from its
// ScenarioInitializer, then add project-specific steps that read the
// Scenario (Result, Ensemble, Dir).
package bdd

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/cucumber/godog"
	"go.opentelemetry.io/otel/trace"

	"github.com/ensemble-run/ensemble/agent"
	"github.com/ensemble-run/ensemble/engine"
	"github.com/ensemble-run/ensemble/ensemble"
	"github.com/ensemble-run/ensemble/internal/cassette"
	"github.com/ensemble-run/ensemble/internal/report"
	"github.com/ensemble-run/ensemble/internal/responses"
	"github.com/ensemble-run/ensemble/kinds"
	"github.com/ensemble-run/ensemble/session"
	"github.com/ensemble-run/ensemble/state"
)

// Options configure the steps. The zero value runs script agents for real,
// fails LLM agents that have no injected response and fails ask agents that
// have none (a test has no terminal).
type Options struct {
	// LookupEnv expands ${VAR} in ensemble files and finds
	// $ENSEMBLE_PROFILES; nil means os.LookupEnv.
	LookupEnv func(string) (string, bool)
	// ProfileFiles are model profiles files loaded with every ensemble
	// (like `--profiles`), before $ENSEMBLE_PROFILES.
	ProfileFiles []string
	// Script runs script agents that have no injected response; nil means
	// the script kind's own runner.
	Script agent.Runner
	// LLM runs LLM agents that have no injected response; nil: they fail,
	// asking for an injected response, unless Models is set.
	LLM agent.Runner
	// Models, with no LLM, lets the kinds' own runners, which the session
	// of each run builds, call the models (`ensemble test`): an LLM agent
	// with no injected response calls its model, behind GuardModels, and a
	// simulated user is played by its model unless Simulate says otherwise.
	Models bool
	// Simulate plays agents whose responses are simulated by a model (a
	// simulated user); nil: such agents fail with a clear error.
	Simulate func(ctx context.Context, req *agent.Request, modelProfile, prompt string) *agent.Result
	// Kinds are the kinds of agent the scenarios run; nil means
	// kinds.Builtin().
	Kinds *kinds.Registry
	// GuardModels keeps scenarios off real models, as `ensemble run
	// --responses` does: an LLM agent without injected responses fails
	// instead of reaching LLM (a real model costs money), whether or not the
	// scenario has a responses file.
	GuardModels bool
	// Live names the LLM agents that GuardModels lets call their model
	// when they have no injected response (`test --live AGENT`): an
	// agent's name, or a child ensemble's agent's path; LiveAll lets every
	// one (`test --live-all`).
	Live    []string
	LiveAll bool
	// RecordMissing adds to the recording of a scenario that names one
	// (Given the recording) what it lacks, asked of the model (`test
	// --record-missing`): the recording step makes the folder when it is
	// missing, and the agents that may reach their model are still those
	// of Live and LiveAll. Scenarios run one at a time.
	RecordMissing bool
	// live notes which of Live the scenarios had (Run sets it).
	live *liveNames
	// saved is the test run the scenarios' runs are saved in (test
	// --state: saved.go); nil: they are not saved.
	saved *testStore
	// simSpend sums what the scenarios' simulated people used (Run sets
	// it; simulator.go).
	simSpend *simSpend
	// Tracer, when set, traces every scenario's run (docs/tracing.md), with
	// its content when TraceContent is set.
	Tracer       trace.Tracer
	TraceContent bool
}

// Scenario is the state of one scenario. Register returns it, so that a
// suite's own steps can read the run.
type Scenario struct {
	opts *Options

	uri string // the feature file, as godog names it (maybe with :line)
	dir string // its folder: relative paths in steps resolve here

	ensLabel string // how messages name the ensemble: the path as written
	ensPath  string // resolved path ("" for an inline ensemble)
	inline   []byte // an inline ensemble (doc string)
	// inlineFile and inlineLine are the feature file of the inline
	// ensemble and the line its doc string opens at (0: unknown).
	inlineFile string
	inlineLine int64
	ens        *ensemble.Ensemble
	// loadErr is why the named ensemble did not load; the steps that need
	// it fail with it. A Given step that comes later (a profiles file) may
	// still fix it, so the Given steps may come in any order.
	loadErr *loadFailure

	profiles  []string // resolved profiles files given by steps
	input     *string
	responses *responses.Responses
	respFile  string // the last responses file given: its LLM agents run offline
	recording string // the recording folder given (recording.go): its LLM agents replay
	// repeat is the run's number among its scenario's runs, from 1, and
	// repeats their most, in a run with repeats; 0 otherwise (recording.go).
	repeat, repeats int
	// cassettes are the recordings its runs opened (sent.go counts their
	// replays).
	cassettes []*cassette.Cassette
	maxTurns  int
	parallel  int
	strict    bool // Given the run is strict: --strict
	// judges are the judges declared, by name, and rulings what they said,
	// by judge and agent (judge.go).
	judges  map[string]*judge
	rulings map[string]*ruling
	checks  []judgeCheck // the judge steps' outcomes, in order
	// judged is what the judges' runs spent, which the run's Usage leaves
	// out (a step about the run's requests or cost is about the ensemble).
	judged  state.Usage
	timeout time.Duration

	ran    bool
	result *engine.Result
	// expectedFailure: a step asked for the run to end expectation_failed
	// (expect.go).
	expectedFailure bool
	// run is the run of the scenario, kept for the answers that resume it
	// (answers.go).
	run *session.Run
	// savedID is the id of its run in the test run's database (saved.go).
	savedID string

	step *godog.Step // the step running, for its doc string or table

	// sims are the simulated people answering its ask agents
	// (simulator.go); nil when it has none.
	sims *simulators

	validated     bool
	validationErr *loadFailure // nil: the validated ensemble is valid
}

// NewScenario returns the state of a fresh scenario whose relative paths
// resolve against dir. Register calls it; a caller that drives the steps
// itself can too.
func NewScenario(dir string, opts Options) *Scenario {
	return &Scenario{opts: &opts, dir: dir, responses: responses.NewResponses()}
}

// Register adds the built-in steps to sc for one scenario and returns the
// scenario's state, fresh for each scenario. The folder of the feature file
// is learnt in a Before hook.
func Register(sc *godog.ScenarioContext, opts Options) *Scenario {
	s := NewScenario(".", opts)
	sc.Before(func(ctx context.Context, p *godog.Scenario) (context.Context, error) {
		s.uri = p.Uri
		file, _ := splitLine(p.Uri)
		s.dir = filepath.Dir(file)
		return ctx, nil
	})
	sc.After(func(ctx context.Context, _ *godog.Scenario, err error) (context.Context, error) {
		if err != nil {
			return ctx, nil // the scenario failed already
		}
		return ctx, terminalSafe(s.expectationsHeld())
	})
	sc.StepContext().Before(func(ctx context.Context, st *godog.Step) (context.Context, error) {
		s.step = st
		return ctx, nil
	})
	res := stepRegexps()
	for i, d := range stepDefs {
		sc.Step(res[i], withArgument(s, d.handler(s), d.Keyword == "Given"))
	}
	return s
}

// stepRegexps are the steps' expressions, compiled once: godog would
// compile them again for every scenario, most of the cost of a run of a
// scenario that is repeated (regexp.Regexp is safe for concurrent use).
var stepRegexps = sync.OnceValue(func() []*regexp.Regexp {
	res := make([]*regexp.Regexp, len(stepDefs))
	for i, d := range stepDefs {
		res[i] = regexp.MustCompile(d.re)
	}
	return res
})

var (
	docStringType = reflect.TypeFor[*godog.DocString]()
	tableType     = reflect.TypeFor[*godog.Table]()
)

// withArgument adapts a step handler whose last parameter is a doc string
// or a table so that godog calls it without that parameter: the adapter
// takes the block from the step itself, and says clearly when it is
// missing or of the other kind (godog would report a missing one in terms
// of Go functions). A handler that takes neither gets a check that the
// step has no block: godog would ignore one, a silent mistake. A given
// step (one that sets up the run) fails after the run, which it could no
// longer change.
func withArgument(s *Scenario, handler any, given bool) any {
	h := reflect.ValueOf(handler)
	t := h.Type()
	n := t.NumIn()
	var want reflect.Type
	if n > 0 && (t.In(n-1) == docStringType || t.In(n-1) == tableType) {
		want, n = t.In(n-1), n-1
	}
	in := make([]reflect.Type, n)
	for i := range in {
		in[i] = t.In(i)
	}
	out := make([]reflect.Type, t.NumOut())
	for i := range out {
		out[i] = t.Out(i)
	}
	return reflect.MakeFunc(reflect.FuncOf(in, out, false), func(args []reflect.Value) []reflect.Value {
		arg, err := s.stepArgument(want)
		if err == nil && given && s.ran {
			err = errors.New("the ensemble already ran: Given steps go before When the ensemble runs")
		}
		if err != nil {
			res := make([]reflect.Value, len(out))
			for i, o := range out {
				res[i] = reflect.Zero(o)
				if o == reflect.TypeFor[error]() {
					res[i] = reflect.ValueOf(&err).Elem()
				}
			}
			return res
		}
		if want != nil {
			args = append(args, arg)
		}
		res := h.Call(args)
		for i, o := range out {
			if o == reflect.TypeFor[error]() && !res[i].IsNil() {
				err := terminalSafe(res[i].Interface().(error))
				res[i] = reflect.ValueOf(&err).Elem()
			}
		}
		return res
	}).Interface()
}

// safeError is an error whose message is shown with its control characters
// escaped (report.TerminalSafe): a step's error quotes values a model or a
// script gave, which the pretty and progress formats print to the terminal.
type safeError struct{ err error }

func (e safeError) Error() string { return report.TerminalSafe(e.err.Error()) }
func (e safeError) Unwrap() error { return e.err }

// terminalSafe is err with its message made safe for a terminal, or err
// itself when it has nothing to escape.
func terminalSafe(err error) error {
	if err == nil {
		return nil
	}
	if msg := err.Error(); report.TerminalSafe(msg) == msg {
		return err
	}
	return safeError{err}
}

// stepArgument returns the doc string or table of the current step, or an
// error when it does not have the block the step takes (want: nil for
// none).
func (s *Scenario) stepArgument(want reflect.Type) (reflect.Value, error) {
	var ds *godog.DocString
	var table *godog.Table
	if s.step != nil && s.step.Argument != nil {
		ds, table = s.step.Argument.DocString, s.step.Argument.DataTable
	}
	switch {
	case want == docStringType && ds != nil:
		return reflect.ValueOf(ds), nil
	case want == tableType && table != nil:
		return reflect.ValueOf(table), nil
	case want == docStringType && table != nil:
		return reflect.Value{}, errors.New(`this step takes a doc string (a block between """ lines), not a table`)
	case want == docStringType:
		return reflect.Value{}, errors.New(`this step needs a doc string (a block between """ lines) below it`)
	case want == tableType:
		return reflect.Value{}, errors.New("this step needs a table below it")
	case ds != nil:
		return reflect.Value{}, errors.New(`this step takes no doc string: remove the block below it (the steps that take one end with ":")`)
	case table != nil:
		return reflect.Value{}, errors.New(`this step takes no table: remove the table below it (the steps that take one end with ":")`)
	}
	return reflect.Value{}, nil
}

// splitLine splits "file.feature:12" into the file and the line suffix.
func splitLine(uri string) (string, string) {
	i := strings.LastIndexByte(uri, ':')
	if i < 0 {
		return uri, ""
	}
	for _, r := range uri[i+1:] {
		if r < '0' || r > '9' {
			return uri, ""
		}
	}
	if i+1 == len(uri) {
		return uri, ""
	}
	return uri[:i], uri[i:]
}

// Dir is the folder relative paths resolve against (the feature file's).
func (s *Scenario) Dir() string { return s.dir }

// FeatureFile is the feature file of the scenario, as godog named it.
func (s *Scenario) FeatureFile() string { file, _ := splitLine(s.uri); return file }

// Ensemble is the loaded ensemble, or nil.
func (s *Scenario) Ensemble() *ensemble.Ensemble { return s.ens }

// Result is the result of the run, or nil before `When the ensemble runs`.
func (s *Scenario) Result() *engine.Result { return s.result }

// Spent is what the scenario spent on models: its run's usage, its
// judges' and its simulated people's.
func (s *Scenario) Spent() state.Usage {
	var u state.Usage
	if s.result != nil {
		u = s.result.Usage
	}
	u.Add(&s.judged)
	sim := s.SimulatorSpent()
	u.Add(&sim)
	return u
}

// Responses are the responses injected so far.
func (s *Scenario) Responses() *responses.Responses { return s.responses }

// Resolve resolves a path written in a step against the feature's folder.
func (s *Scenario) Resolve(p string) string {
	if filepath.IsAbs(p) {
		return p
	}
	return filepath.Join(s.dir, p)
}

func (s *Scenario) lookupEnv(k string) (string, bool) {
	if s.opts.LookupEnv != nil {
		return s.opts.LookupEnv(k)
	}
	return os.LookupEnv(k)
}

func (s *Scenario) profileFiles() []string { return slices.Concat(s.opts.ProfileFiles, s.profiles) }
