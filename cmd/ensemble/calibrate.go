package main

import (
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/ensemble-run/ensemble/engine"
	"github.com/ensemble-run/ensemble/internal/bdd"
)

type calibrateFlags struct {
	output  string
	testRun string
}

// newTestCalibrateCmd is `test calibrate`: each judge step's agreement
// with the labels people gave its verdicts (docs/testing.md#judge-review).
func newTestCalibrateCmd(io *stdio) *cobra.Command {
	var f calibrateFlags
	cmd := &cobra.Command{
		Use:   "calibrate FILE",
		Short: "Measure each judge step against the labels given to its verdicts in ui",
		Long: `Reads the judge verdicts that test --state saved in the state database FILE
and the labels people gave them on a test run's page in ui (accepted or
overridden), and prints for each judge step (its text and rubric, across
the database's test runs, or one with --test-run) the number of labels, the
judge's agreement with them, Cohen's kappa, the true positive rate (of the
outputs labelled pass, the share the judge passed) and the false positive
rate (of those labelled fail, the share the judge passed). A statistic
with nothing to divide by is n/a (null in JSON); a judge step with no
labels says so. Exits 0 when printed; 1 when the database cannot be read;
2 when FILE is no state database, --test-run names no test run of it, or
it holds no judge verdicts.
(A folder of feature files named calibrate is given to test as ./calibrate.)`,
		Args: io.args(1, 1, "one state database FILE"),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runCalibrate(io, args[0], &f)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.output, "output", "text", "the output `FORMAT`: text or json")
	fl.StringVar(&f.testRun, "test-run", "", "only the verdicts of the test run `ID` (default: every test run of FILE)")
	return cmd
}

func runCalibrate(io *stdio, path string, f *calibrateFlags) error {
	if f.output != "text" && f.output != "json" {
		return usageErr("--output must be text or json, got %q", f.output)
	}
	c, err := bdd.Calibrate(path, f.testRun)
	var ue *bdd.UsageError
	switch {
	case errors.As(err, &ue):
		return &exitError{code: engine.ExitUsage, err: fmt.Errorf("test calibrate: %w", err)}
	case err != nil:
		return &exitError{code: engine.ExitFailed, err: fmt.Errorf("test calibrate: %w", err)}
	}
	if f.output == "json" {
		return c.WriteJSON(io.stdout())
	}
	return c.WriteText(io.stdout())
}
