package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/ensemble-run/ensemble/internal/bdd"
)

type testFlags struct {
	format        string
	out           string
	tags          string
	profiles      []string
	noColor       bool
	listSteps     bool
	otel          string // --otel (tracing.go)
	liveFlags            // --live, --live-all (live.go)
	recordMissing bool   // --record-missing
	// runs with repeats (docs/testing.md#testing-with-live-models)
	repeat, concurrency int
	passRate            float64
	baseline, saveBase  string
	maxRequests         int
	maxCost             float64
	// rows of outlines from files (@examples(file=…))
	sample int
	seed   uint64
	// the state database the scenario runs are saved in (--state)
	state string
}

func newTestCmd(io *stdio) *cobra.Command {
	var f testFlags
	cmd := &cobra.Command{
		Use:   "test [PATH...]",
		Short: "Run Gherkin feature files against ensembles with the built-in steps",
		Long: `Runs .feature files (files, or folders searched recursively; default: the
current folder) with the built-in steps (see --list-steps and docs/testing.md).
The search skips hidden folders, testdata, vendor and node_modules. Each
scenario is a fresh run; relative paths in steps resolve against the feature
file's folder. Exits 0 when every scenario passed, 1 when a scenario failed or
a step is undefined or pending, 2 on bad usage (no such path, a Gherkin syntax
error, an unknown format, a tag expression that is not godog's: @a && ~@b,
@a,@b) and when there is nothing to test (no feature files, no scenarios, a
'Scenario' line without its colon, --tags that match no scenario).

LLM agents without injected replies fail rather than call their model,
unless --live names them or --live-all is given. With --repeat N each
scenario runs up to N times (--concurrency runs at a time), and passes when
the share of its runs that pass meets --pass-rate; a scenario's tags
@repeat(N) and @pass-rate(P) override them. A scenario stops early once the
runs left cannot change its verdict, or (from its fifth run) the 95%
confidence interval of its pass rate is clear of the rate it needs.
--save-baseline writes the pass rates; --baseline compares with them and
exits 1 on a regression (Fisher's exact test, p < 0.05). --max-cost and
--max-requests stop starting runs when the runs so far reach them (a
request counts once sent, answered or not), exit 6. No more runs go at once
than there are runs to make. Ctrl-C exits 130: the scenarios left do not
run, and no baseline is saved.`,
		RunE: func(cmd *cobra.Command, args []string) error {
			return runTests(cmd, io, args, &f)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.format, "format", "pretty", "report format: pretty|progress|junit|cucumber|markdown, or a comma-separated list of `FORMAT[:FILE]`")
	fl.StringVar(&f.out, "out", "", "write the report to `FILE` instead of standard output")
	fl.StringVar(&f.tags, "tags", "", "run only the scenarios matching the tag `EXPRESSION` (e.g. \"@smoke && ~@slow\")")
	fl.StringArrayVar(&f.profiles, "profiles", nil, "model profiles `FILE` for every ensemble (repeatable)")
	fl.BoolVar(&f.noColor, "no-color", false, "no ANSI colours (also when NO_COLOR is set or the output is not a terminal)")
	fl.BoolVar(&f.listSteps, "list-steps", false, "list the built-in steps and exit")
	fl.StringVar(&f.otel, "otel", "", "export OpenTelemetry traces of the scenarios' runs to the OTLP/HTTP collector at `URL` (default: $OTEL_EXPORTER_OTLP_ENDPOINT)")
	fl.StringArrayVar(&f.live, "live", nil, "let LLM `AGENT` call its real model when a scenario gives it no injected reply (repeatable)")
	fl.BoolVar(&f.liveAll, "live-all", false, "let every LLM agent without injected replies call its real model")
	fl.BoolVar(&f.recordMissing, "record-missing", false, "add to each scenario's recording (Given the recording) what it lacks, asked of the models --live or --live-all lets through; scenarios run one at a time")
	fl.IntVar(&f.repeat, "repeat", 1, "run each scenario up to `N` times, stopping early once its pass rate is clear (tag: @repeat(N))")
	fl.IntVar(&f.concurrency, "concurrency", bdd.DefaultConcurrency, "with repeats, run `N` scenario runs at a time")
	fl.Float64Var(&f.passRate, "pass-rate", 1, "the share `P` (0 to 1) of a scenario's runs that must pass (tag: @pass-rate(P))")
	fl.StringVar(&f.saveBase, "save-baseline", "", "write each scenario's passes and runs to the baseline `FILE` (JSON); every scenario runs its full --repeat")
	fl.StringVar(&f.baseline, "baseline", "", "compare the pass rates with the baseline `FILE`: a significant fall is a regression, exit 1; every scenario runs its full --repeat")
	fl.IntVar(&f.maxRequests, "max-requests", 0, "stop starting runs once the test run sent `N` model requests, answered or not (exit 6)")
	fl.Float64Var(&f.maxCost, "max-cost", 0, "stop starting runs once the test run spent `COST`, in the unit of the profiles' pricing (exit 6)")
	fl.IntVar(&f.sample, "sample", 0, "run `N` rows, picked at random by --seed, of each outline whose rows come from a file (@examples(file=…)); 0: all")
	fl.Uint64Var(&f.seed, "seed", 1, "the `SEED` of --sample's pick: the same seed picks the same rows")
	fl.StringVar(&f.state, "state", "", "save each scenario run as a run of the state database `FILE`, under a test run that ui lists with its pass rates")
	cmd.PreRunE = func(cmd *cobra.Command, _ []string) error { return checkTestFlags(cmd, &f) }
	cmd.AddCommand(newTestCaptureCmd(io))
	cmd.AddCommand(newTestCalibrateCmd(io)) // calibrate.go
	return cmd
}

// checkTestFlags rejects bad values of the flags of runs with repeats,
// naming the flag.
func checkTestFlags(cmd *cobra.Command, f *testFlags) error {
	if err := checkLimitFlags(cmd); err != nil { // --max-requests, --max-cost
		return err
	}
	fl := cmd.Flags()
	for name, n := range map[string]int{"repeat": f.repeat, "concurrency": f.concurrency} {
		if n < 1 {
			return usageErr("--%s must be at least 1, got %d", name, n)
		}
	}
	if fl.Changed("sample") && f.sample < 1 {
		return usageErr("--sample must be at least 1, got %d", f.sample)
	}
	if !(f.passRate >= 0 && f.passRate <= 1) {
		return usageErr("--pass-rate must be a share from 0 to 1 (0.8 for 80%%), got %g", f.passRate)
	}
	if fl.Changed("state") && f.state == "" {
		return usageErr("--state needs a file name")
	}
	if fl.Changed("baseline") && f.baseline == "" || fl.Changed("save-baseline") && f.saveBase == "" {
		return usageErr("--baseline and --save-baseline need a file name")
	}
	return nil
}

// repeats are the options of runs with repeats the flags ask for.
func (f *testFlags) repeats(cmd *cobra.Command) bdd.Repeats {
	r := bdd.Repeats{
		Repeat:       f.repeat,
		Concurrency:  f.concurrency,
		Baseline:     f.baseline,
		SaveBaseline: f.saveBase,
		MaxCost:      f.maxCost,
		MaxRequests:  f.maxRequests,
	}
	if cmd.Flags().Changed("pass-rate") {
		r.PassRate = &f.passRate
	}
	return r
}

func runTests(cmd *cobra.Command, io *stdio, paths []string, f *testFlags) error {
	if f.listSteps {
		bdd.ListSteps(io.out)
		return nil
	}
	out := io.out
	noColor := f.noColor || !isTerminal(io.out)
	if v, ok := io.lookupEnv("NO_COLOR"); ok && v != "" {
		noColor = true
	}
	if f.out != "" {
		if err := os.MkdirAll(filepath.Dir(f.out), 0o755); err != nil {
			return usageErr("--out: %v", err)
		}
		fh, err := bdd.CreatePrivate(f.out)
		if err != nil {
			return usageErr("--out: %v", err)
		}
		defer fh.Close()
		out, noColor = fh, true
	}
	opts := testOptions(io, f.profiles)
	opts.Live, opts.LiveAll, opts.RecordMissing = f.live, f.liveAll, f.recordMissing
	code, err := bdd.Run(bdd.RunOptions{
		Options:  opts,
		Paths:    paths,
		Format:   f.format,
		Tags:     f.tags,
		Output:   out,
		Stderr:   io.err,
		NoColors: noColor,
		Context:  cmd.Context(),
		Export:   otelExport(io, f.otel),
		Repeats:  f.repeats(cmd),
		Sample:   f.sample,
		Seed:     f.seed,
		State:    f.state,
	})
	var ue *bdd.UsageError
	switch {
	case errors.As(err, &ue):
		return &exitError{code: code, err: fmt.Errorf("test: %w", err)}
	case err != nil:
		return &exitError{code: code, err: err}
	case code != 0:
		return &exitError{code: code}
	}
	return nil
}

// testOptions are the steps' options of `ensemble test`: agents without an
// injected response run for real, through the runners each run's session
// builds, but for LLM agents, which fail rather than reach a model that
// costs money (GuardModels), unless --live or --live-all lets them.
func testOptions(io *stdio, profiles []string) bdd.Options {
	return bdd.Options{
		LookupEnv:    io.lookupEnv,
		ProfileFiles: profiles,
		Models:       true,
		GuardModels:  true,
	}
}
