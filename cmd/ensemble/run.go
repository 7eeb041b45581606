package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/ensemble-run/ensemble/durable"
	"github.com/ensemble-run/ensemble/engine"
	"github.com/ensemble-run/ensemble/ensemble"
	"github.com/ensemble-run/ensemble/internal/readcap"
	"github.com/ensemble-run/ensemble/internal/report"
	"github.com/ensemble-run/ensemble/kinds/ask"
	"github.com/ensemble-run/ensemble/session"
	"github.com/ensemble-run/ensemble/store"
)

// runFlags are the flags of `ensemble run`; `ensemble resume` fills them
// from the state file and its own flags, and both go through runEnsemble.
type runFlags struct {
	input     string
	inputFile string
	maxInput  byteSize // --max-input-size: the largest input read from stdin or a file
	sharedFlags
	stateFile string         // --state: write the state after every turn
	runID     string         // --run-id: the run's id in the state database
	resumed   *durable.Saved // set by `ensemble resume`
	temporal  temporalFlags  // --temporal: the run is a workflow (temporal.go)
	recording recordFlags    // --record, --replay (record.go)
}

// sharedFlags are the flags that run and resume both take: where agents'
// answers and model profiles come from, the overrides of the ensemble's
// limits, and how the run is shown.
type sharedFlags struct {
	responses string
	profiles  []string
	output    string
	maxTurns  int
	timeout   time.Duration
	parallel  int
	// budget caps (docs/semantics.md#budgets): --max-tokens, --max-requests, --max-cost
	maxTokens, maxRequests int
	maxCost                float64
	stream                 bool   // --stream: LLM agents stream, text deltas become events
	report                 string // --report: write a Markdown transcript to this file
	liveFlags
	verbose bool // --verbose: the text summary shows scripts' stderr
	quiet   bool // -q: no progress, no summary, no notices: only errors
	noInput bool // --no-input: ask agents never ask at the terminal
	strict  bool // --strict: a read of a missing key ends the run, exit 7

	otel string // --otel: export traces to this OTLP/HTTP endpoint (tracing.go)

	// --expect: expectations of the run's final state (expect.go), and
	// compiled by the command's PreRunE.
	expect   []string
	expected []*ensemble.Expectation
}

// The commands that take the shared flags, for their wording.
const (
	forRun = iota
	forResume
	forBatch // the flags of each run of a batch; not those of its output
)

// register adds the shared flags to cmd, worded for it.
func (s *sharedFlags) register(cmd *cobra.Command, mode int) {
	fl := cmd.Flags()
	responses, profiles, maxTurns, each, spent := "inject agent responses from `FILE` (testing, CI)", "model profiles `FILE` (repeatable)",
		"override conversation_limits.max_total_turns with `N`", "the run's", " (e.g. to continue a run that spent it)"
	switch mode {
	case forResume:
		responses = "inject agent responses from `FILE` instead of the saved run's"
		profiles = "model profiles `FILE` instead of the saved run's (repeatable)"
		maxTurns = "override max_total_turns with `N` (e.g. to continue a run that reached it)"
	case forBatch:
		responses, each, spent = "inject agent responses from `FILE`: each run starts at the first response", "each run's", ""
	}
	fl.StringVar(&s.responses, "responses", "", responses)
	fl.StringArrayVar(&s.profiles, "profiles", nil, profiles)
	fl.IntVar(&s.maxTurns, "max-turns", 0, maxTurns)
	fl.DurationVar(&s.timeout, "timeout", 0, "override "+each+" timeout with `DURATION` (e.g. 90s, 10m)")
	fl.IntVar(&s.parallel, "parallel", 0, "run at most `N` agents at once (overrides conversation_limits.parallel_agent_limit)")
	fl.IntVar(&s.maxTokens, "max-tokens", 0, "override conversation_limits.max_tokens, "+each+" budget of `N` tokens"+spent)
	fl.IntVar(&s.maxRequests, "max-requests", 0, "override conversation_limits.max_requests, "+each+" budget of `N` model requests")
	fl.Float64Var(&s.maxCost, "max-cost", 0, "override conversation_limits.max_cost, "+each+" budget of `COST` in the unit of the profiles' pricing")
	fl.StringArrayVar(&s.live, "live", nil, "with --responses, let LLM `AGENT` call its real model though it has no responses (repeatable)")
	fl.BoolVar(&s.liveAll, "live-all", false, "with --responses, let every LLM agent without responses call its real model")
	if mode == forBatch {
		fl.BoolVarP(&s.quiet, "quiet", "q", false, "no progress and no summary, only errors")
		return
	}
	fl.StringVar(&s.output, "output", "", "the output `FORMAT`: text, json or jsonl (default text on a terminal, json otherwise)")
	fl.BoolVar(&s.stream, "stream", false, "stream LLM replies: text shows as it comes (--output text), text_delta events (--output jsonl)")
	fl.StringVar(&s.report, "report", "", "write a Markdown transcript of the run to `FILE.md` when it ends")
	fl.BoolVar(&s.verbose, "verbose", false, "the text summary also shows what each script printed on stderr (its last 4 KiB)")
	fl.BoolVarP(&s.quiet, "quiet", "q", false, "print no progress, summary or notice, only errors (--output text still prints the final state)")
	fl.BoolVar(&s.strict, "strict", false, "end the run, exit 7, on a read of a key its value does not have (or a null message to a model): the warning as a failure")
	fl.BoolVar(&s.noInput, "no-input", false, "never ask at the terminal: a saved run (run --state, resume) waits for answers given to resume, exit 5")
	fl.StringVar(&s.otel, "otel", "", "export OpenTelemetry traces to the OTLP/HTTP collector at `URL` (default: $OTEL_EXPORTER_OTLP_ENDPOINT)")
	fl.StringArrayVar(&s.expect, "expect", nil, "a condition `EXPR` the final state of the completed run must meet, or it ends expectation_failed, exit 8 (repeatable)")
	cmd.PreRunE = func(cmd *cobra.Command, _ []string) error {
		if err := checkLimitFlags(cmd); err != nil {
			return err
		}
		return s.compileExpect()
	}
}

// minDuration is the least duration a flag takes: a shorter one would be
// rounded to nothing somewhere down the line.
const minDuration = time.Millisecond

// checkLimitFlags rejects limit overrides that are given but not positive,
// as the file's own limits are: 0 would otherwise silently mean "no
// override"; and durations under minDuration.
func checkLimitFlags(cmd *cobra.Command) error {
	fl := cmd.Flags()
	for _, name := range []string{"max-turns", "parallel", "max-tokens", "max-requests"} {
		if n, err := fl.GetInt(name); err == nil && fl.Changed(name) && n < 1 {
			return usageErr("--%s must be at least 1, got %d", name, n)
		}
	}
	// An infinite cap is no cap, and a state file (JSON) cannot hold it.
	if c, err := fl.GetFloat64("max-cost"); err == nil && fl.Changed("max-cost") && (!(c > 0) || math.IsInf(c, 0)) {
		return usageErr("--max-cost must be a finite number more than 0, got %g", c)
	}
	var err error
	fl.Visit(func(f *pflag.Flag) {
		if d, derr := fl.GetDuration(f.Name); err == nil && derr == nil && d < minDuration {
			err = usageErr("--%s must be at least %s, got %s", f.Name, minDuration, d)
		}
	})
	return err
}

func newRunCmd(io *stdio) *cobra.Command {
	var f runFlags
	cmd := &cobra.Command{
		Use:   "run FILE",
		Short: "Run an ensemble",
		Long: `Run the ensemble FILE to its end: on a terminal with live progress and a
summary (--output text), else printing the result as JSON (--output json), or
each event as a line of JSON (--output jsonl). With --state, the run is saved
after every turn, and resume continues it after Ctrl-C, a crash or a limit.

` + exitCodesHelp,
		Args: io.args(1, 1, "one ensemble FILE"),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runEnsemble(cmd.Context(), io, args[0], &f, cmd.Flags().Changed("input"))
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.input, "input", "", "the run's input `TEXT` (- reads standard input)")
	fl.StringVar(&f.inputFile, "input-file", "", "read the run's input from `FILE`")
	f.maxInput = defaultMaxInput
	fl.Var(&f.maxInput, "max-input-size", "the largest input `SIZE` --input - and --input-file accept (bytes, or e.g. 64KiB, 20MB, 1GiB)")
	fl.StringVar(&f.stateFile, "state", "", "save the run in the state database `FILE` after every turn (resume continues it)")
	fl.StringVar(&f.runID, "run-id", "", "with --state, the run's `ID` in the database (default: a new one, printed with --output text)")
	f.sharedFlags.register(cmd, forRun)
	f.temporal.register(cmd, "run on the Temporal cluster at `HOST:PORT`, whose workers run the agents", false)
	f.recording.register(fl)
	return cmd
}

func (f *runFlags) check(inputSet bool) error {
	if inputSet && f.inputFile != "" {
		return usageErr("--input and --input-file are mutually exclusive")
	}
	if f.runID != "" && f.resumed == nil {
		if f.stateFile == "" && f.temporal.addr == "" {
			return usageErr("--run-id needs --state (or --temporal)")
		}
		if err := store.CheckID(f.runID); err != nil {
			return usageErr("--run-id: %v", err)
		}
	}
	if len(f.expect) > 0 && f.temporal.addr != "" {
		return usageErr("--expect and --temporal: a run on Temporal checks only its file's expect:")
	}
	if f.output != "" && !slices.Contains(runOutputs, f.output) {
		return usageErr("--output must be text, json or jsonl, got %q", f.output)
	}
	return nil
}

// readInput resolves --input / --input-file; ok is false when neither was given.
func (f *runFlags) readInput(io *stdio, inputSet bool) (input string, ok bool, err error) {
	switch {
	case f.inputFile != "":
		file, err := os.Open(f.inputFile)
		if err != nil {
			return "", false, usageErr("--input-file: %v", err)
		}
		defer file.Close()
		b, err := readUpTo(file, f.maxInput)
		if err != nil {
			return "", false, usageErr("--input-file %s: %v", f.inputFile, err)
		}
		return string(b), true, nil
	case inputSet && f.input == "-":
		b, err := readUpTo(io.in, f.maxInput)
		if err != nil {
			return "", false, usageErr("--input -: reading standard input: %v", err)
		}
		// The newline that ends the last line is not part of the input, as
		// in $(...) of a shell.
		return trimNewline(string(b)), true, nil
	case inputSet:
		return f.input, true, nil
	}
	return "", false, nil
}

// trimNewline drops one trailing "\n" or "\r\n".
func trimNewline(s string) string {
	s, ok := strings.CutSuffix(s, "\n")
	if ok {
		s = strings.TrimSuffix(s, "\r")
	}
	return s
}

// defaultMaxInput is the default of --max-input-size: as much as a script's
// output may be.
const defaultMaxInput byteSize = 10 << 20

// readUpTo reads r to its end, failing once it has read more than limit
// bytes (an endless stream must not exhaust the memory).
func readUpTo(r io.Reader, limit byteSize) ([]byte, error) {
	if r == nil {
		return nil, nil
	}
	b, err := readcap.ReadAll(r, int64(limit))
	if _, ok := errors.AsType[*readcap.TooLargeError](err); ok {
		return nil, fmt.Errorf("the input is larger than %s (raise the limit with --max-input-size)", limit)
	}
	return b, err
}

// byteSize is a flag's size in bytes (readcap.ParseSize).
type byteSize int64

func (b *byteSize) Set(s string) error {
	n, err := readcap.ParseSize(s)
	*b = byteSize(n)
	return err
}

func (b byteSize) String() string { return readcap.Size(int64(b)) }

func (*byteSize) Type() string { return "size" }

func runEnsemble(ctx context.Context, io *stdio, path string, f *runFlags, inputSet bool) error {
	if err := f.check(inputSet); err != nil {
		return err
	}
	e, err := loadEnsemble(io, path, f.profiles)
	if err != nil {
		return &exitError{code: engine.ExitUsage, err: err}
	}
	if err := f.checkReport(e); err != nil { // before the state is made
		return err
	}
	input, haveInput, err := f.readInput(io, inputSet)
	if err != nil {
		return err
	}
	if !haveInput {
		input = e.Input
	}
	o, err := f.newOptions(io)
	if err != nil {
		return err
	}
	c, err := durable.New(e, input, o)
	if err != nil {
		return io.newError(f.stateFile, err)
	}
	defer c.Abandon() // if it never ran
	if !c.OnTemporal() {
		f.printWarnings(io, e)
	}
	opts := f.runOptions(io, inputSet && f.input == "-", c.Save() != nil)
	return execute(ctx, io, e, f, opts, func(ctx context.Context, opts session.Options, ro session.RunOptions) (*durable.Started, *durable.Run, error) {
		st, err := c.Start(ctx, opts, ro)
		if err != nil {
			return nil, nil, io.startError(f.stateFile, err, true)
		}
		return st, c.Save(), nil
	})
}

// newOptions are the options of durable.New the flags ask for: where
// the run is saved (--state, --run-id), what it is started with, its
// recording, and the Temporal cluster that plays it (--temporal).
func (f *runFlags) newOptions(io *stdio) (durable.NewOptions, error) {
	o := durable.NewOptions{ID: f.runID, Refs: durable.Refs{Responses: f.responses, Profiles: f.profiles},
		Recording: f.recording.Recording, Temporal: f.temporal.options()}
	if f.stateFile == "" {
		return o, nil
	}
	sync, err := durable.SyncFrom(io.lookupEnv)
	if err != nil {
		return o, usageErr("%v", err)
	}
	if o.Refs, err = f.refs(); err != nil {
		return o, usageErr("%v", err)
	}
	if f.runID != "" && !durable.SavesInDatabase(f.stateFile) {
		return o, usageErr("--run-id: --state %s is a JSON state file, which holds one run; name a state database", f.stateFile)
	}
	o.Path, o.Sync = f.stateFile, sync
	return o, nil
}

// printWarnings prints what validate warns about (docs/format.md#warnings),
// once before the run, as a compiler does; -q leaves it to validate.
func (s *sharedFlags) printWarnings(io *stdio, e *ensemble.Ensemble) {
	if s.quiet {
		return
	}
	for _, w := range e.Warnings {
		io.printWarning(w)
	}
}

// opener starts a run with the front door's options opts and ro: in the
// session it opens, or on Temporal; save is its saving (nil: not saved).
type opener func(ctx context.Context, opts session.Options, ro session.RunOptions) (st *durable.Started, save *durable.Run, err error)

// execute is what run and resume share: the view of the run, the run
// open starts with opts and ro (in its session, tracing as --otel asks,
// or on Temporal), its notices, result and exit code.
func execute(ctx context.Context, io *stdio, e *ensemble.Ensemble, f *runFlags, opts session.Options, open opener) error {
	opts.Tracing.Export = f.export(io)
	output := f.outputFormat(io)
	view, err := newRunView(io, e, output, f)
	if err != nil {
		return err
	}
	defer view.Close()
	st, save, err := open(ctx, opts, session.RunOptions{Events: view.Sink()})
	if err != nil {
		return err
	}
	defer st.Close()
	f.warnUnpriced(io, e)
	if output == "text" && !f.quiet {
		id, onTemporal := st.OnTemporal()
		switch {
		case onTemporal:
			addr := f.temporal.addr
			fmt.Fprintf(io.stderr(), "ensemble: run %s on %s (answer with: %s answer --temporal %s %s AGENT TEXT)\n", id, addr, io.program(), addr, id)
		case f.resumed != nil && f.resumed.IsFork():
			p := f.resumed.File.Parent
			fmt.Fprintf(io.stderr(), "ensemble: run %s of %s, forked from run %s at turn %d, goes on from turn %d\n",
				f.resumed.Info.ID, f.resumed.Path, p.Run, p.Turn, p.Turn+1)
		case f.resumed != nil:
			done, what := f.resumed.File.State.TurnCount, f.resumed.Path
			if f.resumed.Info != nil {
				what = "run " + f.resumed.Info.ID + " of " + f.resumed.Path
			}
			fmt.Fprintf(io.stderr(), "ensemble: resuming %s from turn %d (%s done)\n", what, done+1, report.Count(done, "turn"))
		case save != nil && save.IsDatabase():
			fmt.Fprintf(io.stderr(), "ensemble: run %s, saved in %s\n", save.ID(), f.stateFile)
		}
	}
	stop := view.Start()
	res, saveErr := st.Run(ctx)
	stop()
	if res == nil { // a run on Temporal that could not be played
		return saveErr
	}
	resume := ""
	if saveErr != nil {
		fmt.Fprintf(io.stderr(), "ensemble: %v\n", saveErr)
		saveErr = &exitError{code: engine.ExitFailed}
	} else if save != nil {
		resume = io.resumeCommand(f.stateFile)
		if save.IsDatabase() {
			// A database may hold other runs by the time the hint is used
			// (a run that waits for an answer may wait for days): the hint
			// names its run, as state show's does.
			resume += " --run-id " + shellQuote(save.ID())
		}
	}
	if f.resumed != nil {
		res.Parent = f.resumed.File.Parent // a fork, or a resume of one
	}
	if output == "json" {
		if err := st.WriteJSON(io.stdout(), res); err != nil {
			return fmt.Errorf("writing the result: %w", err)
		}
	}
	viewErr := finishView(io, view, f, res, resume)
	if saveErr == nil {
		saveErr = viewErr
	}
	if code := st.ExitCode(res); code != 0 {
		return &exitError{code: code}
	}
	return saveErr
}

// runOptions are the options of a new run the flags ask for: the front
// door's (frontOptions) and the limits; its injected responses are
// durable.New's.
func (s *sharedFlags) runOptions(io *stdio, stdinTaken, durable bool) session.Options {
	opts := s.frontOptions(io, stdinTaken, durable)
	opts.Limits = session.Limits{MaxTurns: s.maxTurns, Timeout: s.timeout, Parallel: s.parallel, Budget: s.budget()}
	return opts
}

// frontOptions are what the command decides of its runs, a resumed one's
// too: ask agents on the terminal unless stdin is taken (--input -), and
// waiting for an answer when the run is durable; streaming; --live.
func (s *sharedFlags) frontOptions(io *stdio, stdinTaken, durable bool) session.Options {
	return session.Options{
		LookupEnv: io.lookupEnv,
		Ask: ask.Options{
			In:          io.in,
			Out:         io.stderr(),
			Interactive: !stdinTaken && (io.inTTY || isTerminal(io.in)),
			Suspend:     durable,
			NoInput:     s.noInput,
		},
		Models: session.Models{Stream: s.stream, Live: s.live, LiveAll: s.liveAll},
		Checks: session.Checks{Strict: s.strict, Expect: s.expected},
	}
}

// outputFormat is --output, or its default: text on a terminal, json
// otherwise.
func (s *sharedFlags) outputFormat(io *stdio) string {
	if s.output != "" {
		return s.output
	}
	if isTerminal(io.out) {
		return "text"
	}
	return "json"
}

// refs are what the run is started with beside its ensemble, saved with
// it.
func (f *runFlags) refs() (durable.Refs, error) {
	rec, err := f.recording.Saved()
	return durable.Refs{Responses: f.responses, Profiles: f.profiles, Recording: rec}, err
}

// stateError is an error of the state file at path, for the command line:
// a usage error (exit 2), "--state: ERR" (flag true, for run and batch) or
// ERR, with the command that goes on where one is needed.
func (s *stdio) stateError(path string, err error, flag bool) error {
	var ee *exitError
	var unfinished *durable.UnfinishedError
	var ens *durable.EnsembleFileError
	switch {
	case errors.As(err, &ee):
		return err
	case errors.As(err, &unfinished):
		return usageErr("--state %v; %s", err, s.hint(err))
	case errors.As(err, &ens):
		return usageErr("%v; start a durable run with: %s run %s --state run.db", err, s.program(), shellQuote(path))
	case errors.Is(err, durable.ErrChanged):
		return usageErr("%s was changed by another ensemble process while this one read it: run %s again", path, s.resumeCommand(path))
	case flag:
		return usageErr("--state: %v", err)
	}
	return &exitError{code: engine.ExitUsage, err: err}
}

// warnUnpriced warns that --max-cost is never reached when no model
// profile has pricing: every request then costs 0
// (docs/semantics.md#budgets).
func (s *sharedFlags) warnUnpriced(io *stdio, e *ensemble.Ensemble) {
	if s.maxCost == 0 || s.quiet {
		return
	}
	for _, m := range e.Models {
		if m != nil && m.Pricing != nil {
			return
		}
	}
	fmt.Fprintln(io.stderr(), "ensemble: warning: --max-cost is never reached: no model profile has pricing, so requests cost 0")
}

// budget is the budget caps given on the command line; nil when none.
func (s *sharedFlags) budget() *ensemble.Budget {
	b := &ensemble.Budget{MaxTokens: s.maxTokens, MaxRequests: s.maxRequests, MaxCost: s.maxCost}
	if b.Empty() {
		return nil
	}
	return b
}
