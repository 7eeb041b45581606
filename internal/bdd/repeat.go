package bdd

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"sync"
	"time"

	"github.com/cucumber/godog"
	"github.com/cucumber/godog/formatters"
	messages "github.com/cucumber/messages/go/v21"

	"github.com/ensemble-run/ensemble/engine"
	"github.com/ensemble-run/ensemble/state"
)

// ExitBudget is Run's exit code when --max-cost or --max-requests stopped
// the test run before every scenario had its runs: the engine's code for a
// spent budget.
const ExitBudget = engine.ExitBudget

// ExitCancelled is Run's exit code when Ctrl-C or SIGTERM stopped a test
// run with repeats: the code of a cancelled run. No baseline is saved.
const ExitCancelled = engine.ExitCancelled

// DefaultConcurrency is how many runs a run with repeats runs at a time by
// default.
const DefaultConcurrency = 4

// Repeats are the options of a run with repeats (docs/testing.md#testing-with-live-models).
type Repeats struct {
	// Repeat is the most runs of each scenario (--repeat); 0 means 1. A
	// scenario's @repeat(N) tag overrides it.
	Repeat int
	// Concurrency is how many runs run at a time; 0 means
	// DefaultConcurrency.
	Concurrency int
	// PassRate is the share of runs that must pass (--pass-rate), from 0
	// to 1; nil means 1. A scenario's @pass-rate(P) tag overrides it.
	PassRate *float64
	// Baseline is a baseline file to compare the pass rates with;
	// SaveBaseline, where to write them. Either one runs every scenario
	// its full number of runs.
	Baseline, SaveBaseline string
	// MaxCost and MaxRequests, when > 0, stop starting runs once the
	// runs so far have spent that much (in the profiles' pricing unit) or
	// made that many model requests.
	MaxCost     float64
	MaxRequests int
}

// active reports whether the options ask for a run with repeats.
func (r *Repeats) active() bool {
	return r.Repeat > 1 || r.PassRate != nil || r.Baseline != "" || r.SaveBaseline != "" || r.MaxCost > 0 || r.MaxRequests > 0
}

// check validates the options, naming the flag of a bad value.
func (r *Repeats) check() error {
	switch {
	case r.Repeat < 0:
		return usagef("--repeat must be at least 1, got %d", r.Repeat)
	case r.Concurrency < 0:
		return usagef("--concurrency must be at least 1, got %d", r.Concurrency)
	case r.PassRate != nil && (math.IsNaN(*r.PassRate) || *r.PassRate < 0 || *r.PassRate > 1):
		return usagef("--pass-rate must be a share from 0 to 1 (0.8 for 80%%), got %g", *r.PassRate)
	case r.MaxCost < 0 || math.IsNaN(r.MaxCost) || math.IsInf(r.MaxCost, 0):
		return usagef("--max-cost must be a finite number more than 0, got %g", r.MaxCost)
	case r.MaxRequests < 0:
		return usagef("--max-requests must be at least 1, got %d", r.MaxRequests)
	}
	return nil
}

// runResult is one run of a scenario.
type runResult struct {
	n        int // its number among the scenario's runs, from 1, in the order they started
	passed   bool
	failure  string // the first step that did not pass, and why
	steps    []stepOutcome
	result   *engine.Result // nil when the scenario did not run its ensemble
	usage    state.Usage
	replays  int          // model requests its recordings answered (sent.go)
	checks   []judgeCheck // its judge steps' outcomes (flake.go)
	duration time.Duration
	// runID is its ensemble's run in a test run saved (saved.go), and
	// failStep and failMsg its failure's step and message.
	runID, failStep, failMsg string

	// simulated is what its simulated people used (simulator.go), which
	// usage holds too and result's usage does not.
	simulated state.Usage
}

type stepOutcome struct {
	status string // passed, failed, skipped, undefined, pending, ambiguous
	err    string
}

// tracked is a scenario as its runs go.
type tracked struct {
	*planned
	early   bool
	started int
	passes  int
	runs    []*runResult // counted runs, in the order they ended
	verdict verdict
	stopped bool // decided before its last run
	// metricFailures are why its pass^k and pass@k steps failed (passk.go).
	metricFailures []string
	inflight       map[int]context.CancelFunc
}

// done is how many runs count.
func (t *tracked) done() int { return len(t.runs) }

// saved is how many runs the early stop spared.
func (t *tracked) saved() int {
	if !t.stopped {
		return 0
	}
	return t.maxRuns - t.done()
}

// repeatRun is a run with repeats as it goes: its scenarios, the spend,
// and the runs it may start.
type repeatRun struct {
	o         *RunOptions
	undefined *undefinedSteps

	mu       sync.Mutex
	cond     *sync.Cond
	ts       []*tracked
	spent    state.Usage
	budget   string // why the budget stopped the run, "" while it has not
	running  int
	sending  int // the requests the runs under way have sent (sent.go)
	canceled bool
	workers  int // how many workers started
}

// runAll runs the scenarios of pl, Concurrency runs at a time, each until
// its verdict is clear or it ran its runs, and returns them.
func runAll(ctx context.Context, o *RunOptions, pl *plan, undefined *undefinedSteps) *repeatRun {
	rr := &repeatRun{o: o, undefined: undefined}
	rr.cond = sync.NewCond(&rr.mu)
	early := o.Baseline == "" && o.SaveBaseline == ""
	for _, p := range pl.scenarios {
		// A scenario with pass^k or pass@k steps runs all its runs: the
		// estimates are of them all.
		rr.ts = append(rr.ts, &tracked{planned: p, early: early && len(p.metrics) == 0, inflight: map[int]context.CancelFunc{}})
	}
	stop := context.AfterFunc(ctx, func() {
		rr.mu.Lock()
		rr.canceled = true
		rr.cond.Broadcast()
		rr.mu.Unlock()
	})
	defer stop()
	var wg sync.WaitGroup
	// Ctrl-C or SIGTERM stops the start of the workers too: none starts
	// once the test run is cancelled.
	for range rr.workerCount() {
		if ctx.Err() != nil {
			break
		}
		rr.workers++
		wg.Go(func() { rr.work(ctx) })
	}
	wg.Wait()
	return rr
}

// workerCount is how many runs go at once: --concurrency, but never more
// than the runs there are to start, as a batch runs no more at once than
// its inputs (a worker with no run to start would only wait, each with its
// stack: --concurrency 1000000 took 8.8 GB); 1 when adding to recordings.
func (rr *repeatRun) workerCount() int {
	workers := rr.o.Concurrency
	if workers <= 0 {
		workers = DefaultConcurrency
	}
	if rr.o.RecordMissing {
		workers = 1 // runs adding to one recording folder would write its files together
	}
	runs := 0
	for _, t := range rr.ts {
		if runs >= workers {
			break
		}
		runs += max(t.maxRuns, 0)
	}
	return min(workers, runs)
}

// work starts runs until none is left to start.
func (rr *repeatRun) work(ctx context.Context) {
	for {
		rr.mu.Lock()
		t := rr.next()
		if t == nil {
			rr.mu.Unlock()
			return
		}
		t.started++
		n := t.started
		runCtx, cancel := context.WithCancel(ctx)
		t.inflight[n] = cancel
		rr.running++
		sent := &sentCounter{rr: rr}
		rr.mu.Unlock()

		res := runOnce(sent.trace(runCtx), rr.o, t.planned, n, rr.undefined)
		res.n = n

		rr.mu.Lock()
		interrupted := runCtx.Err() != nil
		cancel()
		rr.running--
		delete(t.inflight, n)
		sent.end(res)
		rr.spent.Add(&res.usage)
		counted := false
		switch {
		case t.verdict == undecided && interrupted:
			t.started-- // cancelled with the test run: it does not count
		case t.verdict == undecided:
			counted = true
			t.runs = append(t.runs, res)
			if res.passed {
				t.passes++
			}
			t.verdict = decide(t.passes, t.done(), t.maxRuns, t.need, t.early)
			if t.verdict != undecided {
				t.stopped = t.done() < t.maxRuns
				for _, c := range t.inflight { // their verdict is known: spare them
					c()
				}
			}
		}
		rr.checkBudget()
		rr.cond.Broadcast()
		rr.mu.Unlock()
		if ts := rr.o.saved; ts != nil {
			ts.record(t.planned, t.name, n, res, resultStatus(counted, res.passed))
		}
	}
}

// next is the scenario whose next run starts now: the first one undecided
// with runs left to start; nil when none is left. It waits while every
// undecided scenario has its runs started but not ended (one that fails
// may leave none to start). The lock is held.
func (rr *repeatRun) next() *tracked {
	for {
		rr.checkBudget()
		if rr.canceled || rr.budget != "" {
			return nil
		}
		waiting := false
		for _, t := range rr.ts {
			if t.verdict != undecided {
				continue
			}
			if t.started < t.maxRuns {
				return t
			}
			waiting = true
		}
		if !waiting {
			return nil
		}
		rr.cond.Wait()
	}
}

// checkBudget stops starting runs once the spend reaches --max-cost or
// --max-requests. The lock is held.
func (rr *repeatRun) checkBudget() {
	if rr.budget != "" {
		return
	}
	o := rr.o
	// The requests of the runs under way count from the moment they are
	// sent: the runs that end may count more (sent.go).
	switch requests := rr.spent.Requests + rr.sending; {
	case o.MaxRequests > 0 && requests >= o.MaxRequests:
		rr.budget = fmt.Sprintf("--max-requests %d reached (%d model requests made)", o.MaxRequests, requests)
	case o.MaxCost > 0 && rr.spent.Cost >= o.MaxCost:
		rr.budget = fmt.Sprintf("--max-cost %g reached (%s spent)", o.MaxCost, formatCost(rr.spent.Cost))
	}
}

func formatCost(c float64) string {
	return fmt.Sprintf("%.4g", c)
}

// runDiscard is the format of the suites of single runs: they report
// nothing, the run with repeats reports them all.
const runDiscard = "ensemble-discard"

func init() {
	godog.Format(runDiscard, "no report (each run of a scenario with repeats)", func(string, io.Writer) formatters.Formatter { return discard{} })
}

type discard struct{}

func (discard) TestRunStarted()                                   {}
func (discard) Feature(*messages.GherkinDocument, string, []byte) {}
func (discard) Pickle(*messages.Pickle)                           {}
func (discard) Defined(*messages.Pickle, *messages.PickleStep, *formatters.StepDefinition) {
}
func (discard) Failed(*messages.Pickle, *messages.PickleStep, *formatters.StepDefinition, error) {
}
func (discard) Passed(*messages.Pickle, *messages.PickleStep, *formatters.StepDefinition)  {}
func (discard) Skipped(*messages.Pickle, *messages.PickleStep, *formatters.StepDefinition) {}
func (discard) Undefined(*messages.Pickle, *messages.PickleStep, *formatters.StepDefinition) {
}
func (discard) Pending(*messages.Pickle, *messages.PickleStep, *formatters.StepDefinition) {}
func (discard) Ambiguous(*messages.Pickle, *messages.PickleStep, *formatters.StepDefinition, error) {
}
func (discard) Summary() {}

// runOnce runs one scenario once, fresh, through a godog suite of its own
// that selects it by file:line (an outline's other rows are skipped).
func runOnce(ctx context.Context, o *RunOptions, p *planned, n int, undefined *undefinedSteps) *runResult {
	res := &runResult{}
	start := time.Now()
	var (
		pickles int
		target  *Scenario
	)
	// A feature whose outline's rows come from a file runs from its
	// expansion, all of whose pickles are counted (examplesfile.go).
	paths, contents := []string{p.where()}, []godog.Feature(nil)
	if p.contents != nil {
		paths, contents = nil, []godog.Feature{{Name: p.file, Contents: p.contents}}
	}
	suite := godog.TestSuite{
		Name: "ensemble",
		ScenarioInitializer: func(sc *godog.ScenarioContext) {
			i := pickles
			pickles++
			s := Register(sc, o.Options)
			if p.contents == nil && i != p.row || p.contents != nil && i != p.pickle {
				sc.Before(func(ctx context.Context, _ *godog.Scenario) (context.Context, error) { return ctx, godog.ErrSkip })
				return
			}
			target = s
			s.repeat, s.repeats = n, p.maxRuns
			sc.StepContext().After(func(ctx context.Context, st *godog.Step, status godog.StepResultStatus, err error) (context.Context, error) {
				if status == godog.StepUndefined || errors.Is(err, godog.ErrUndefined) {
					undefined.add(st.Text, p.stepPlaces(st.Text)...)
				}
				noteStep(res, p, st, status, err)
				return ctx, nil
			})
			sc.After(func(ctx context.Context, _ *godog.Scenario, err error) (context.Context, error) {
				if err != nil && res.failMsg == "" {
					res.failMsg = err.Error() // an expectation of the final state, say
				}
				return ctx, nil
			})
		},
		Options: &godog.Options{
			Format:          runDiscard,
			Paths:           paths,
			FeatureContents: contents,
			Strict:          true,
			Output:          io.Discard,
			NoColors:        true,
			DefaultContext:  ctx,
			Concurrency:     1,
		},
	}
	status := suite.Run()
	res.duration = time.Since(start)
	if target == nil {
		res.failure = fmt.Sprintf("the scenario at %s did not run", p.where())
		return res
	}
	res.passed = status == 0 && res.failure == ""
	if !res.passed && res.failure == "" {
		res.failure = "the scenario failed"
		if len(p.steps) == 0 {
			res.failure = noSteps
		}
	}
	res.result = target.Result()
	res.runID = target.savedID
	res.usage = target.Spent() // the judges' requests count towards --max-cost and --max-requests
	res.simulated = target.SimulatorSpent()
	res.replays = target.replays()
	res.checks = target.checks
	return res
}
