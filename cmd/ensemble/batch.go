package main

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/ensemble-run/ensemble/durable"
	"github.com/ensemble-run/ensemble/engine"
	"github.com/ensemble-run/ensemble/ensemble"
	"github.com/ensemble-run/ensemble/internal/batch"
	"github.com/ensemble-run/ensemble/internal/report"
	"github.com/ensemble-run/ensemble/state"
	"github.com/ensemble-run/ensemble/store"
)

// batchFlags are the flags of `ensemble batch` (docs/cli.md#ensemble-batch).
type batchFlags struct {
	sharedFlags // those a batch takes: responses, profiles, limits, budget, live, quiet
	inputs      string
	out         string
	concurrency int
	stateFile   string // --state: each run durable, the batch resumable
	resume      string // --resume DB
	batchID     string
	force       bool
	temporal    temporalFlags // --temporal: each input is a workflow (temporal.go)
}

func newBatchCmd(io *stdio) *cobra.Command {
	var f batchFlags
	cmd := &cobra.Command{
		Use:   "batch FILE --inputs INPUTS.jsonl [--out RESULTS.jsonl] | batch --resume DB",
		Short: "Run an ensemble once per input line",
		Long: `Run the ensemble FILE once per line of INPUTS.jsonl, --concurrency runs at a
time, in this process. A line is a JSON string (the input) or an object
{"id": ..., "input": ...}; without an id, the line number is the id.

The output (--out, default standard output) has one line per input, in the
order of the inputs, {"id": ..., "result": RESULT}, where RESULT is what
run --output json prints, on one line. Each line is written as soon as the
lines before it are. A summary goes to standard error at the end, and a
progress line while it runs when standard error is a terminal.

With --state DB, every run is saved in the state database DB after every
turn, and the batch with it: "batch --resume DB" finishes what is
unfinished and completes the output.

Exit 0 when every run completed without a failure. Otherwise the exit code
of the runs that did not, when they all ended with the same one (3 when
every one of them stopped at max_total_turns), else 1; 130 when
interrupted, 2 when nothing ran.`,
		Args: func(cmd *cobra.Command, args []string) error {
			if f.resume != "" {
				if len(args) > 0 {
					return usageErr("--resume takes no ensemble file: the batch's is saved in %s", f.resume)
				}
				return nil
			}
			if len(args) != 1 {
				return io.args(1, 1, "one ensemble FILE (or --resume DB and none)")(cmd, args)
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			if f.resume != "" {
				return resumeBatch(cmd.Context(), io, &f, cmd.Flags().Changed)
			}
			return startBatch(cmd.Context(), io, args[0], &f)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.inputs, "inputs", "", "the inputs, one a line: a JSON string or {\"id\": …, \"input\": …} (`FILE`.jsonl; - reads standard input)")
	fl.StringVar(&f.out, "out", "-", "write the results to `FILE`.jsonl, one line per input in input order (- standard output)")
	fl.IntVar(&f.concurrency, "concurrency", batch.DefaultConcurrency, "run `N` inputs at a time")
	fl.StringVar(&f.stateFile, "state", "", "save every run and the batch in the state database `FILE` (finish it with --resume FILE)")
	fl.StringVar(&f.resume, "resume", "", "finish the batch saved in the state database `FILE`")
	fl.StringVar(&f.batchID, "batch-id", "", "the batch's `ID` in the state database (default: a new one; with --resume, its one unfinished batch)")
	fl.BoolVar(&f.force, "force", false, "with --resume, go on although the ensemble, inputs or responses file changed")
	f.sharedFlags.register(cmd, forBatch)
	f.temporal.register(cmd, "run every input on the Temporal cluster at `HOST:PORT`, whose workers run the agents", false)
	cmd.PreRunE = func(cmd *cobra.Command, _ []string) error {
		if err := checkLimitFlags(cmd); err != nil {
			return err
		}
		if f.concurrency < 1 {
			return usageErr("--concurrency must be at least 1, got %d", f.concurrency)
		}
		if f.resume != "" {
			for _, name := range []string{"inputs", "state", "responses", "profiles", "max-turns", "timeout", "parallel",
				"max-tokens", "max-requests", "max-cost", "live", "live-all", "temporal"} {
				if cmd.Flags().Changed(name) {
					return usageErr("--%s: a resumed batch goes on with what it was started with (only --concurrency, --out, --batch-id, --force and -q are taken)", name)
				}
			}
			return nil
		}
		if f.inputs == "" {
			return usageErr("--inputs FILE is required")
		}
		if f.force {
			return usageErr("--force goes with --resume")
		}
		if f.batchID != "" && f.stateFile == "" {
			return usageErr("--batch-id needs --state")
		}
		if f.batchID != "" {
			if err := store.CheckID(f.batchID); err != nil {
				return usageErr("--batch-id: %v", err)
			}
		}
		if f.stateFile != "" && f.inputs == "-" {
			return usageErr("--state needs --inputs FILE, which a resumed batch reads again (not standard input)")
		}
		return nil
	}
	return cmd
}

// readInputs reads and parses the inputs file (- standard input), and
// returns the SHA-256 of its bytes, in hex.
func readInputs(io *stdio, path string) ([]*batch.Input, string, error) {
	inputs, sum, err := batch.ReadInputs(path, io.in)
	var re *batch.ReadError
	switch {
	case errors.As(err, &re):
		return nil, "", usageErr("--inputs: %v", err)
	case err != nil:
		return nil, "", &exitError{code: engine.ExitUsage, err: err}
	}
	return inputs, sum, nil
}

// startBatch is `ensemble batch FILE`.
func startBatch(ctx context.Context, io *stdio, path string, f *batchFlags) error {
	read := []batch.File{{What: "the ensemble file", Path: path}, {What: "the --inputs file", Path: f.inputs},
		{What: "the --state database", Path: f.stateFile}, {What: "the --responses file", Path: f.responses}}
	for _, p := range f.profiles {
		read = append(read, batch.File{What: "a --profiles file", Path: p})
	}
	if err := batch.CheckOutput(f.out, read); err != nil {
		return usageErr("%v", err)
	}
	e, err := loadEnsemble(io, path, f.profiles)
	if err != nil {
		return &exitError{code: engine.ExitUsage, err: err}
	}
	if !f.quiet {
		for _, w := range e.Warnings {
			io.printWarning(w)
		}
	}
	inputs, sum, err := readInputs(io, f.inputs)
	if err != nil {
		return err
	}
	o, err := f.options(io, e, sum)
	if err != nil {
		return err
	}
	started, err := batch.Start(ctx, e, o)
	if err != nil {
		return f.startError(io, err)
	}
	defer started.Close()
	f.warnUnpriced(io, e)
	b := &batch.Batch{Inputs: inputs, Concurrency: f.concurrency, RunOne: started.RunOne}
	resume := ""
	switch st := started.Store; {
	case started.OnTemporal != "":
		if !f.quiet {
			fmt.Fprintf(io.stderr(), "ensemble: batch %s on %s\n", started.OnTemporal, f.temporal.addr)
		}
	case st != nil:
		b.Save, b.Commit = st.SaveLine, st.Commit
		resume = io.program() + " batch --resume " + shellQuote(f.stateFile)
		if !f.quiet {
			fmt.Fprintf(io.stderr(), "ensemble: batch %s, saved in %s\n", st.ID(), f.stateFile)
		}
	}
	out, closeOut, err := openOutput(io, f.out, false)
	if err != nil {
		return err
	}
	b.Out = out
	return finishBatch(ctx, io, b, started.Store, closeOut, resume, f.quiet)
}

// options are the options of batch.Start the flags ask for: the runs'
// session (their ask agents never ask at the terminal: their answers
// come from --responses), the batch's saving (--state, with its spec:
// sum is the inputs file's SHA-256), the Temporal cluster (--temporal).
func (f *batchFlags) options(io *stdio, e *ensemble.Ensemble, sum string) (batch.Options, error) {
	opts := f.runOptions(io, true, false)
	opts.Ask.Batch = true
	refs := durable.Refs{Responses: f.responses, Profiles: f.profiles}
	o := batch.Options{Session: opts, Refs: refs, Temporal: f.temporal.options()}
	if f.stateFile == "" {
		return o, nil
	}
	sync, err := durable.SyncFrom(io.lookupEnv)
	if err != nil {
		return o, usageErr("%v", err)
	}
	so := state.Options{MaxTurns: f.maxTurns, Parallel: f.parallel, MaxTokens: f.maxTokens, MaxRequests: f.maxRequests, MaxCost: f.maxCost}
	so.SetTimeout(f.timeout)
	spec, err := batch.NewSpec(e, f.inputs, sum, f.out, refs, so)
	if err != nil {
		return o, usageErr("%v", err)
	}
	spec.Concurrency, spec.Live, spec.LiveAll = f.concurrency, f.live, f.liveAll
	o.State, o.ID, o.Spec, o.Sync = f.stateFile, f.batchID, spec, sync
	return o, nil
}

// startError is the error of a batch that did not start (batch.Start),
// for the command line.
func (f *batchFlags) startError(io *stdio, err error) error {
	var ce *batch.CreateError
	var exists *batch.ExistsError
	switch {
	case errors.Is(err, durable.ErrTemporalSaved):
		return usageErr("--state and --temporal: runs on Temporal are durable already")
	case !errors.As(err, &ce):
		return io.startError("", err, false)
	case errors.As(err, &exists):
		return usageErr("--state %v; %s", err, io.hint(err))
	case errors.Is(err, batch.ErrNotDatabase):
		return usageErr("--state %v", err)
	}
	return usageErr("--state: %v", err)
}

// finishBatch runs b, closes the output, marks a durable batch done, and
// prints the summary. st is nil when the batch is not saved.
func finishBatch(ctx context.Context, io *stdio, b *batch.Batch, st *batch.Store, closeOut func() error, resume string, quiet bool) error {
	if !quiet && io.errIsTerminal() {
		b.Progress = io.stderr()
	}
	stats := b.RunTo(ctx, st, closeOut)
	if !quiet {
		stats.Summary(io.stderr(), resume)
	} else {
		for _, e := range stats.Errs {
			fmt.Fprintf(io.stderr(), "ensemble: %s\n", e)
		}
	}
	if code := stats.ExitCode(); code != 0 {
		return &exitError{code: code}
	}
	return nil
}

// openOutput opens the output (batch.OpenOutput), redacted.
func openOutput(io *stdio, path string, keep bool) (io.Writer, func() error, error) {
	w, closeOut, err := batch.OpenOutput(path, io.stdout(), keep, io.secrets.Writer)
	if err != nil {
		return nil, nil, usageErr("--out: %v", err)
	}
	return w, closeOut, nil
}

// resumeBatch is `ensemble batch --resume DB`: it finishes the runs of the
// batch that have not ended, runs those that never started, and completes
// the output, which ends as it would have had the batch never stopped.
func resumeBatch(ctx context.Context, io *stdio, f *batchFlags, changed func(string) bool) error {
	path := f.resume
	sync, err := durable.SyncFrom(io.lookupEnv)
	if err != nil {
		return usageErr("%v", err)
	}
	saved, err := batch.Open(path, f.batchID, sync)
	if err != nil {
		return &exitError{code: engine.ExitUsage, err: err}
	}
	defer saved.Close()
	spec := saved.Spec
	e, err := loadEnsemble(io, spec.Ensemble.Path, spec.Profiles)
	if err != nil {
		return &exitError{code: engine.ExitUsage, err: fmt.Errorf("cannot resume batch %s: its ensemble file does not load:\n%w", saved.ID(), err)}
	}
	out := ""
	if changed("out") {
		out = f.out
	}
	rs, err := saved.Prepare(e, path, out, f.force)
	var ce *batch.ChangedError
	switch {
	case errors.As(err, &ce):
		return usageErr("%v; %s", err, io.hint(err))
	case err != nil:
		return &exitError{code: engine.ExitUsage, err: err}
	case len(rs.Changes) > 0:
		fmt.Fprintf(io.stderr(), "ensemble: warning: %v; resuming anyway (--force)\n", &batch.ChangedError{Changes: rs.Changes})
	}
	opts, err := spec.SessionOptions(e)
	if err != nil {
		return &exitError{code: engine.ExitUsage, err: err}
	}
	opts.LookupEnv, opts.Ask.In, opts.Ask.Out = io.lookupEnv, io.in, io.stderr()
	started, err := batch.Start(ctx, e, batch.Options{Session: opts, Saved: saved})
	if err != nil {
		return f.startError(io, err)
	}
	defer started.Close()
	concurrency := spec.Concurrency
	if changed("concurrency") || concurrency < 1 {
		concurrency = f.concurrency
	}
	w, closeOut, err := openOutput(io, rs.Out, true)
	if err != nil {
		return err
	}
	if !f.quiet {
		fmt.Fprintf(io.stderr(), "ensemble: resuming batch %s of %s: %d of %s done\n", saved.ID(), spec.Ensemble.Path, len(rs.Done), report.Count(len(rs.Inputs), "input"))
	}
	b := &batch.Batch{Inputs: rs.Inputs, RunOne: started.RunOne, Concurrency: concurrency, Done: rs.Done, Written: rs.Written, Out: w, Save: saved.SaveLine, Commit: saved.Commit}
	resume := io.program() + " batch --resume " + shellQuote(path)
	if f.batchID != "" {
		resume += " --batch-id " + shellQuote(f.batchID)
	}
	return finishBatch(ctx, io, b, saved.Store, closeOut, resume, f.quiet)
}
