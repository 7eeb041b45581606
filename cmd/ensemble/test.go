package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/ensemble-run/ensemble/agent"
	"github.com/ensemble-run/ensemble/bdd"
	"github.com/ensemble-run/ensemble/kinds"
)

type testFlags struct {
	format    string
	out       string
	tags      string
	profiles  []string
	noColor   bool
	listSteps bool
	otel      string // --otel (tracing.go)
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
'Scenario' line without its colon, --tags that match no scenario).`,
		RunE: func(cmd *cobra.Command, args []string) error {
			return runTests(cmd, io, args, &f)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.format, "format", "pretty", "report format: pretty|progress|junit|cucumber, or a comma-separated list of `FORMAT[:FILE]`")
	fl.StringVar(&f.out, "out", "", "write the report to `FILE` instead of standard output")
	fl.StringVar(&f.tags, "tags", "", "run only the scenarios matching the tag `EXPRESSION` (e.g. \"@smoke && ~@slow\")")
	fl.StringArrayVar(&f.profiles, "profiles", nil, "model profiles `FILE` for every ensemble (repeatable)")
	fl.BoolVar(&f.noColor, "no-color", false, "no ANSI colours (also when NO_COLOR is set or the output is not a terminal)")
	fl.BoolVar(&f.listSteps, "list-steps", false, "list the built-in steps and exit")
	fl.StringVar(&f.otel, "otel", "", "export OpenTelemetry traces of the scenarios' runs to the OTLP/HTTP collector at `URL` (default: $OTEL_EXPORTER_OTLP_ENDPOINT)")
	cmd.AddCommand(newTestCaptureCmd(io))
	return cmd
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
		fh, err := os.Create(f.out)
		if err != nil {
			return usageErr("--out: %v", err)
		}
		defer fh.Close()
		out, noColor = fh, true
	}
	tracing, err := startTracing(cmd.Context(), io, f.otel)
	if err != nil {
		return err
	}
	defer tracing.stop()
	opts := testOptions(io, f.profiles)
	opts.Tracer, opts.TraceContent = tracing.tracer()
	code, err := bdd.Run(bdd.RunOptions{
		Options:  opts,
		Paths:    paths,
		Format:   f.format,
		Tags:     f.tags,
		Output:   out,
		Stderr:   io.err,
		NoColors: noColor,
		Context:  cmd.Context(),
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
// injected response run for real, but for LLM agents, which fail rather
// than reach a model that costs money (GuardModels).
func testOptions(io *stdio, profiles []string) bdd.Options {
	live := kinds.Builtin().Runner(&agent.Host{LookupEnv: io.lookupEnv}, nil)
	return bdd.Options{
		LookupEnv:    io.lookupEnv,
		ProfileFiles: profiles,
		LLM:          live,
		Simulate:     live.Simulator(),
		GuardModels:  true,
	}
}
