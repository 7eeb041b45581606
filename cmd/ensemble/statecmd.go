package main

import (
	"encoding/json"
	"fmt"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/ensemble-run/ensemble/durable"
	"github.com/ensemble-run/ensemble/engine"
	"github.com/ensemble-run/ensemble/internal/report"
	"github.com/ensemble-run/ensemble/state"
	"github.com/ensemble-run/ensemble/store"
)

// newStateCmd is `ensemble state`: reading the runs a state file keeps
// (docs/cli.md#ensemble-state).
func newStateCmd(io *stdio) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "state",
		Short: "Show, export or list the runs kept in a state file",
		Long: `Read the runs that run --state keeps in a state database (or a JSON state
file). Nothing runs, and nothing is written to the file.`,
	}
	cmd.AddCommand(newStateShowCmd(io), newStateExportCmd(io), newStateListCmd(io))
	return io.group(cmd)
}

func newStateShowCmd(io *stdio) *cobra.Command {
	var runID, output string
	var t temporalFlags
	cmd := &cobra.Command{
		Use:   "show FILE",
		Short: "Print the result of a saved run, as the run printed it",
		Long: `Print the result of a saved run as of its last completed turn: the JSON a run
prints with --output json, or its summary with --output text. Its
completion_reason is empty while the run has not finished (or was killed);
duration_seconds is the time from its start to its last save.`,
		Args: io.args(1, 1, "one state FILE (with --temporal, a run's ID)"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if output != "" && output != "json" && output != "text" {
				return usageErr("--output must be json or text, got %q", output)
			}
			if t.addr != "" { // args[0] is a run's id (temporal.go)
				return showTemporal(cmd.Context(), io, &t, args[0], output)
			}
			sf, run, err := loadSaved(io, args[0], runID)
			if err != nil {
				return err
			}
			// What the run printed of its output, what it waits for, or
			// held back: read against its ensemble, when that still loads.
			e, err := loadEnsemble(io, sf.Ensemble.Path, sf.Profiles)
			if err != nil {
				e = nil
			}
			res := durable.ResultOf(e, sf, run)
			outputAgent := ""
			if e != nil && engine.CheckState(e, sf) == nil {
				outputAgent = e.Output
			}
			if output == "" {
				output = "json"
				if isTerminal(io.out) {
					output = "text"
				}
			}
			if output == "text" {
				return printSummary(io, res, args[0], run, outputAgent)
			}
			return res.WriteJSON(io.stdout()) // as run --output json prints it
		},
	}
	cmd.Flags().StringVar(&runID, "run-id", "", "the run `ID` in the database (default: its one run)")
	t.register(cmd, "read the run from the Temporal cluster at `HOST:PORT` (FILE is then the run's id)", false)
	cmd.Flags().StringVar(&output, "output", "", "the output `FORMAT`: json or text (default text on a terminal, json otherwise)")
	return cmd
}

func newStateExportCmd(io *stdio) *cobra.Command {
	var runID string
	cmd := &cobra.Command{
		Use:   "export FILE",
		Short: "Print a saved run as a JSON state file",
		Long: `Print a saved run in the JSON state file format, for tools that read JSON:
resume continues such a file too (writing it as JSON).`,
		Args: io.args(1, 1, "one state FILE"),
		RunE: func(cmd *cobra.Command, args []string) error {
			sf, _, err := loadSaved(io, args[0], runID)
			if err != nil {
				return err
			}
			data, err := state.Marshal(sf)
			if err != nil {
				return err
			}
			_, err = io.stdout().Write(data)
			return err
		},
	}
	cmd.Flags().StringVar(&runID, "run-id", "", "the run `ID` in the database (default: its one run)")
	return cmd
}

func newStateListCmd(io *stdio) *cobra.Command {
	var output string
	cmd := &cobra.Command{
		Use:   "list FILE",
		Short: "List the runs of a state file",
		Long: `List the runs of a state file: id, ensemble, start, turns, how each ended
("unfinished" while it goes on, or was killed), and the run and turn a fork
was started from (resume --from-turn).`,
		Args: io.args(1, 1, "one state FILE"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if output != "" && output != "json" && output != "text" {
				return usageErr("--output must be json or text, got %q", output)
			}
			runs, err := durable.List(args[0]) // a JSON state file's one run has the id "-"
			if err != nil {
				return io.stateError(args[0], err, false)
			}
			if output == "json" {
				enc := json.NewEncoder(io.stdout())
				enc.SetIndent("", "  ")
				return enc.Encode(runs)
			}
			tw := tabwriter.NewWriter(io.stdout(), 0, 0, 2, ' ', 0)
			fmt.Fprintln(tw, "ID\tENSEMBLE\tSTARTED\tTURNS\tSTATUS\tFORKED FROM")
			for _, r := range runs {
				started := "-"
				if !r.Started.IsZero() {
					started = r.Started.Local().Format(time.DateTime)
				}
				parent := "-"
				if r.Parent != "" {
					parent = fmt.Sprintf("%s at turn %d", r.Parent, r.ParentTurn)
				}
				fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%s\t%s\n", r.ID, r.Ensemble, started, r.Turns, durable.Status(r.CompletionReason), parent)
			}
			return tw.Flush()
		},
	}
	cmd.Flags().StringVar(&output, "output", "text", "the output `FORMAT`: text or json")
	return cmd
}

// loadSaved reads a run from a state database (the one named by runID, or
// its only run) or a JSON state file.
func loadSaved(io *stdio, path, runID string) (*state.File, *store.RunInfo, error) {
	if runID != "" && durable.IsJSONFile(path) {
		return nil, nil, usageErr("--run-id: %s is a JSON state file, which holds one run", path)
	}
	sf, run, err := durable.Load(path, runID)
	if err != nil {
		return nil, nil, io.stateError(path, err, false)
	}
	return sf, run, nil
}

// printSummary prints the text summary of a saved run.
func printSummary(io *stdio, res *engine.Result, path string, run *store.RunInfo, output string) error {
	opts := report.SummaryOptions{Width: io.termWidth(), Resume: io.resumeCommand(path), Output: output}
	if run != nil {
		opts.Resume += " --run-id " + shellQuote(run.ID)
	}
	if p := res.Parent; p != nil {
		fmt.Fprintf(io.stdout(), "(a fork of run %s: its first %s are that run's)\n", p.Run, report.Count(p.Turn, "turn"))
	}
	if res.CompletionReason != "" {
		report.Summary(io.stdout(), res, opts)
		fmt.Fprint(io.stdout(), strings.ReplaceAll(report.PendingNotice(res, opts.Resume), "ensemble: ", ""))
		return nil
	}
	shown := *res
	shown.CompletionReason = "unfinished"
	report.Summary(io.stdout(), &shown, opts)
	fmt.Fprintf(io.stdout(), "(it has not finished, or its process was killed; it goes on with: %s)\n", opts.Resume)
	return nil
}
