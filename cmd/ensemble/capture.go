package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/ensemble-run/ensemble/engine"
	"github.com/ensemble-run/ensemble/internal/capture"
)

type captureFlags struct {
	runID string
	out   string
	force bool
}

// newTestCaptureCmd is `test capture`: a saved run becomes a test
// (docs/testing.md#a-run-becomes-a-test).
func newTestCaptureCmd(io *stdio) *cobra.Command {
	var f captureFlags
	cmd := &cobra.Command{
		Use:   "capture STATE --out DIR",
		Short: "Turn a saved run into a test that replays it offline",
		Long: `Writes a test of a run saved with run --state (a state database, or a
JSON state file) into DIR: a .feature file that runs the run's ensemble
(named by a path relative to DIR) on its input and checks its completion
reason, each agent's execution count and each agent's last output, and the
replies its LLM and ask agents got, as a responses file, or as a copy of its
recording when it was made with --record. Running test DIR then replays the
run offline, calling no model. A run that is unfinished, cancelled, or ended
on its timeout or budget is refused: a replay would not stop where it did.
A file of an earlier capture that differs is refused unless --force.
(A folder of feature files named capture is given to test as ./capture.)`,
		Args: io.args(1, 1, "one state FILE"),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runCapture(io, args[0], &f)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.runID, "run-id", "", "the run `ID` in the database (default: its one run)")
	fl.StringVar(&f.out, "out", "", "write the test into the folder `DIR` (required)")
	fl.BoolVar(&f.force, "force", false, "overwrite the files of an earlier capture that differ")
	return cmd
}

func runCapture(io *stdio, path string, f *captureFlags) error {
	if f.out == "" {
		return usageErr("test capture needs --out DIR, the folder to write the test into")
	}
	sf, run, err := loadSaved(io, path, f.runID)
	if err != nil {
		return err
	}
	r := capture.Run{File: sf, Source: path}
	if run != nil {
		r.ID = run.ID
	}
	e, err := loadEnsemble(io, sf.Ensemble.Path, sf.Profiles)
	if err != nil {
		return &exitError{code: engine.ExitUsage, err: fmt.Errorf("cannot capture the run of %s: its ensemble file %s does not load:\n%w", path, sf.Ensemble.Path, err)}
	}
	opts := capture.Options{Out: f.out, Ensemble: e, Force: f.force}
	c, err := capture.Build(r, opts)
	if err != nil {
		return &exitError{code: engine.ExitUsage, err: err}
	}
	res, err := c.Write(opts)
	if err != nil {
		return &exitError{code: engine.ExitUsage, err: err}
	}
	fmt.Fprintf(io.stdout(), "wrote %s\n", res.Feature)
	if res.Responses != "" {
		fmt.Fprintf(io.stdout(), "wrote %s\n", res.Responses)
	}
	if res.Recording != "" {
		fmt.Fprintf(io.stdout(), "copied the recording to %s\n", res.Recording)
	}
	for _, n := range res.Notes {
		fmt.Fprintf(io.stderr(), "ensemble: note: %s\n", n)
	}
	fmt.Fprintf(io.stdout(), "run it with: %s test %s\n", io.program(), shellQuote(f.out))
	return nil
}
