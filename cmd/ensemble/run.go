package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/ensemble-run/ensemble/agent"
	"github.com/ensemble-run/ensemble/cassette"
	"github.com/ensemble-run/ensemble/engine"
	"github.com/ensemble-run/ensemble/ensemble"
	"github.com/ensemble-run/ensemble/events"
	"github.com/ensemble-run/ensemble/kinds"
	"github.com/ensemble-run/ensemble/mcptools"
	"github.com/ensemble-run/ensemble/report"
	"github.com/ensemble-run/ensemble/runners"
	"github.com/ensemble-run/ensemble/store"
)

// runFlags are the flags of `ensemble run`; `ensemble resume` fills them
// from the state file and its own flags, and both go through runEnsemble.
type runFlags struct {
	input     string
	inputFile string
	maxInput  byteSize // --max-input-size: the largest input read from stdin or a file
	sharedFlags
	stateFile string            // --state: write the state after every turn
	runID     string            // --run-id: the run's id in the state database
	resume    *resumeInfo       // set by `ensemble resume`
	newRunID  string            // the id of the new run in the state database (set by durable)
	answers   map[string]string // resume --answer: by agent (answers.go)
	resumeCmd string            // the command that continues the run, once saved ("": from stateFile)
	temporal  temporalFlags     // --temporal: the run is a workflow (temporal.go)
	recording recordFlags       // --record, --replay (record.go)
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

	otel string // --otel: export traces to this OTLP/HTTP endpoint (tracing.go)
}

// register adds the shared flags to cmd; resume words the help of those
// that replace what the saved run was started with.
func (s *sharedFlags) register(cmd *cobra.Command, resume bool) {
	fl := cmd.Flags()
	responses, profiles, maxTurns := "inject agent responses from `FILE` (testing, CI)", "model profiles `FILE` (repeatable)",
		"override conversation_limits.max_total_turns"
	if resume {
		responses = "inject agent responses from `FILE` instead of the saved run's"
		profiles = "model profiles `FILE` instead of the saved run's (repeatable)"
		maxTurns = "override max_total_turns (e.g. to continue a run that reached it)"
	}
	fl.StringVar(&s.responses, "responses", "", responses)
	fl.StringArrayVar(&s.profiles, "profiles", nil, profiles)
	fl.StringVar(&s.output, "output", "", "text|json|jsonl (default text on a terminal, json otherwise)")
	fl.IntVar(&s.maxTurns, "max-turns", 0, maxTurns)
	fl.DurationVar(&s.timeout, "timeout", 0, "override the run's timeout (e.g. 90s, 10m)")
	fl.IntVar(&s.parallel, "parallel", 0, "override conversation_limits.parallel_agent_limit")
	fl.IntVar(&s.maxTokens, "max-tokens", 0, "override conversation_limits.max_tokens, the run's token budget (e.g. to continue a run that spent it)")
	fl.IntVar(&s.maxRequests, "max-requests", 0, "override conversation_limits.max_requests, the run's budget of model requests")
	fl.Float64Var(&s.maxCost, "max-cost", 0, "override conversation_limits.max_cost, the run's budget in the unit of the profiles' pricing")
	fl.BoolVar(&s.stream, "stream", false, "stream LLM replies: text shows as it comes (--output text), text_delta events (--output jsonl)")
	fl.StringVar(&s.report, "report", "", "write a Markdown transcript of the run to `FILE.md` when it ends")
	fl.StringArrayVar(&s.live, "live", nil, "with --responses, let LLM `AGENT` call its real model though it has no responses (repeatable)")
	fl.BoolVar(&s.liveAll, "live-all", false, "with --responses, let every LLM agent without responses call its real model")
	fl.BoolVar(&s.verbose, "verbose", false, "the text summary also shows what each script printed on stderr (its last 4 KiB)")
	fl.BoolVarP(&s.quiet, "quiet", "q", false, "print no progress, summary or notice, only errors (--output text still prints the final state)")
	fl.BoolVar(&s.noInput, "no-input", false, "never ask at the terminal: with --state, ask agents wait for answers given to resume")
	fl.StringVar(&s.otel, "otel", "", "export OpenTelemetry traces to the OTLP/HTTP collector at `URL` (default: $OTEL_EXPORTER_OTLP_ENDPOINT)")
	cmd.PreRunE = func(cmd *cobra.Command, _ []string) error { return checkLimitFlags(cmd) }
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
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runEnsemble(cmd.Context(), io, args[0], &f, cmd.Flags().Changed("input"))
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.input, "input", "", "the run's input `TEXT` (- reads standard input)")
	fl.StringVar(&f.inputFile, "input-file", "", "read the run's input from `FILE`")
	f.maxInput = defaultMaxInput
	fl.Var(&f.maxInput, "max-input-size", "the largest input `SIZE` --input - and --input-file accept (bytes, or e.g. 64KiB, 20MB, 1GiB)")
	fl.StringVar(&f.stateFile, "state", "", "save the run in the state database `FILE` after every turn (continue it with ensemble resume FILE)")
	fl.StringVar(&f.runID, "run-id", "", "with --state, the run's `ID` in the database (default: a new one, printed with --output text)")
	f.sharedFlags.register(cmd, false)
	f.temporal.register(cmd, false)
	f.recording.register(fl)
	return cmd
}

func (f *runFlags) check(inputSet bool) error {
	if inputSet && f.inputFile != "" {
		return usageErr("--input and --input-file are mutually exclusive")
	}
	if f.runID != "" && f.resume == nil {
		if f.stateFile == "" && f.temporal.addr == "" {
			return usageErr("--run-id needs --state (or --temporal)")
		}
		if err := store.CheckID(f.runID); err != nil {
			return usageErr("--run-id: %v", err)
		}
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
	b, err := io.ReadAll(io.LimitReader(r, int64(limit)+1))
	if err != nil {
		return nil, err
	}
	if int64(len(b)) > int64(limit) {
		return nil, fmt.Errorf("the input is larger than %s (raise the limit with --max-input-size)", limit)
	}
	return b, nil
}

// byteSize is a flag's size in bytes: a count, or a number with a unit
// (KB, MB, GB: powers of 1000; KiB, MiB, GiB: powers of 1024; B).
type byteSize int64

var sizeUnits = []struct {
	suffix string
	n      int64
}{ // longest suffixes first
	{"KiB", 1 << 10}, {"MiB", 1 << 20}, {"GiB", 1 << 30},
	{"KB", 1e3}, {"MB", 1e6}, {"GB", 1e9}, {"B", 1},
}

func (b *byteSize) Set(s string) error {
	num, unit := strings.TrimSpace(s), int64(1)
	for _, u := range sizeUnits {
		if cut, ok := strings.CutSuffix(num, u.suffix); ok {
			num, unit = strings.TrimSpace(cut), u.n
			break
		}
	}
	n, err := strconv.ParseInt(num, 10, 64)
	if err != nil || n < 1 || n > math.MaxInt64/unit {
		return fmt.Errorf("want a positive size such as 1048576, 64KiB or 20MB, got %q", s)
	}
	*b = byteSize(n * unit)
	return nil
}

func (b byteSize) String() string {
	for _, u := range sizeUnits[:3] {
		if n := int64(b); n >= u.n && n%u.n == 0 && (n/u.n < 1024 || u.suffix == "GiB") {
			return fmt.Sprintf("%d%s", n/u.n, u.suffix)
		}
	}
	return fmt.Sprintf("%d bytes", int64(b))
}

func (*byteSize) Type() string { return "size" }

func runEnsemble(ctx context.Context, io *stdio, path string, f *runFlags, inputSet bool) error {
	if err := f.check(inputSet); err != nil {
		return err
	}
	e, err := loadEnsemble(io, path, f.profiles)
	if err != nil {
		if f.resume != nil {
			err = f.resume.loadError(err)
		}
		return &exitError{code: engine.ExitUsage, err: err}
	}
	if !f.quiet {
		// What validate warns about (docs/format.md#warnings), said once
		// before the run, as a compiler does; -q leaves it to validate.
		for _, w := range e.Warnings {
			io.printWarning(w)
		}
	}
	input, haveInput, err := f.readInput(io, inputSet)
	if err != nil {
		return err
	}
	if !haveInput {
		input = e.Input
	}
	runner, err := buildRunner(io, e, f.responses, &f.liveFlags, inputSet && f.input == "-", f.stream,
		askHost{suspend: f.stateFile != "", noInput: f.noInput, answers: f.answers})
	if err != nil {
		return &exitError{code: engine.ExitUsage, err: err}
	}
	cas, err := f.recording.open()
	if err != nil {
		return &exitError{code: engine.ExitUsage, err: err}
	}
	ctx = cassette.With(ctx, cas)
	if inj, ok := runner.(*runners.InjectedRunner); ok && cas != nil && !cas.Live() {
		inj.Live = nil // agents without responses replay: no real model is called
	}
	// The MCP servers the agents name start with the run and end with it
	// (docs/llm.md#mcp-tools); a tool they do not have stops the run here.
	servers, err := mcptools.Start(ctx, e, mcptools.Options{})
	if err != nil && ctx.Err() != nil { // Ctrl-C while a server starts
		return &exitError{code: engine.ExitCancelled, err: fmt.Errorf("interrupted: %w", err)}
	}
	if err != nil {
		return &exitError{code: engine.ExitUsage, err: err}
	}
	defer servers.Close()
	ctx = mcptools.NewContext(ctx, servers)
	output := f.output
	if output == "" {
		output = "json"
		if isTerminal(io.out) {
			output = "text"
		}
	}
	tracing, err := startTracing(ctx, io, f.otel)
	if err != nil {
		return err
	}
	defer tracing.stop()
	view, err := newRunView(io, e, output, f)
	if err != nil {
		return err
	}
	defer view.close()
	if f.temporal.addr != "" {
		return runTemporal(ctx, io, e, path, input, f, view, output)
	}
	r, saveFinal, err := f.durable(io, e, input, tracing.options(engine.Options{
		Runner:   runner,
		MaxTurns: f.maxTurns,
		Timeout:  f.timeout,
		Parallel: f.parallel,
		Budget:   f.budget(),
		Events:   view.sink,
		Secrets:  io.secrets,
	}))
	if err != nil {
		return err
	}
	if inj, ok := runner.(*runners.InjectedRunner); ok && f.resume != nil {
		inj.Resume(r.State().History) // responses by path go on where they were
	}
	if f.maxCost > 0 && !f.quiet && !anyPriced(e) {
		fmt.Fprintln(io.stderr(), "ensemble: warning: --max-cost is never reached: no model profile has pricing, so requests cost 0")
	}
	if rs := f.resume; rs != nil && output == "text" && !f.quiet {
		done, what := rs.file.State.TurnCount, rs.path
		if rs.run != nil {
			what = "run " + rs.run.ID + " of " + rs.path
		}
		fmt.Fprintf(io.stderr(), "ensemble: resuming %s from turn %d (%s done)\n", what, done+1, report.Count(done, "turn"))
	}
	if f.newRunID != "" && output == "text" && !f.quiet {
		fmt.Fprintf(io.stderr(), "ensemble: run %s, saved in %s\n", f.newRunID, f.stateFile)
	}
	stop := view.start()
	res := r.Run(ctx)
	stop()
	saveErr := saveFinal(res)
	if output == "json" {
		if err := res.WriteJSON(io.stdout()); err != nil {
			return fmt.Errorf("writing the result: %w", err)
		}
	}
	viewErr := view.finish(res)
	if saveErr == nil {
		saveErr = viewErr
	}
	if code := res.ExitCode(); code != 0 {
		return &exitError{code: code}
	}
	return saveErr
}

// buildRunner wires the runners for e: scripts, models (streaming their
// replies as text_delta events with --stream), the terminal for ask agents,
// and injected responses (and simulated users) in front of them when
// --responses is given, with the models of agents it has no entry for
// guarded by --live and --live-all.
func buildRunner(io *stdio, e *ensemble.Ensemble, responsesFile string, live *liveFlags, stdinTaken, stream bool, ask askHost) (runners.Runner, error) {
	if err := live.check(e); err != nil {
		return nil, err
	}
	r := kinds.Builtin().Runner(&agent.Host{
		LookupEnv:   io.lookupEnv,
		Stream:      stream,
		In:          io.in,
		Out:         io.stderr(),
		Interactive: !stdinTaken && (io.inTTY || isTerminal(io.in)),
		Suspend:     ask.suspend,
		NoInput:     ask.noInput,
		Answers:     ask.answers,
		Batch:       ask.batch,
	}, nil)
	if responsesFile == "" {
		return r, nil
	}
	resp, err := runners.LoadResponses(responsesFile)
	if err != nil {
		return nil, err
	}
	if err := resp.Validate(e); err != nil {
		return nil, err
	}
	inj := runners.Injected(resp, r)
	inj.Simulate = r.Simulator()
	inj.Live = live.guard(responsesFile)
	return inj, nil
}

// askHost is what ask agents are given: whether the run is durable (a
// question may wait for resume), --no-input, and resume's answers.
type askHost struct {
	suspend, noInput bool
	answers          map[string]string
	batch            bool // a run of ensemble batch: never asks
}

// newJSONLines writes one event per line.
func newJSONLines(w io.Writer) events.Sink {
	enc := json.NewEncoder(w)
	var mu sync.Mutex
	return func(ev events.Event) {
		mu.Lock()
		defer mu.Unlock()
		_ = enc.Encode(ev)
	}
}

// anyPriced reports whether a model profile has pricing: without one,
// every request costs 0 and a max_cost is never reached
// (docs/semantics.md#budgets).
func anyPriced(e *ensemble.Ensemble) bool {
	for _, m := range e.Models {
		if m != nil && m.Pricing != nil {
			return true
		}
	}
	return false
}

// budget is the budget caps given on the command line; nil when none.
func (s *sharedFlags) budget() *ensemble.Budget {
	b := &ensemble.Budget{MaxTokens: s.maxTokens, MaxRequests: s.maxRequests, MaxCost: s.maxCost}
	if b.Empty() {
		return nil
	}
	return b
}
