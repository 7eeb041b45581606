package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"sync"

	"github.com/spf13/cobra"

	"github.com/ensemble-run/ensemble/engine"
	"github.com/ensemble-run/ensemble/ensemble"
	"github.com/ensemble-run/ensemble/runners"
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

// defaultConcurrency is how many runs of a batch go at once by default.
const defaultConcurrency = 4

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
turn, and the batch with it: "ensemble batch --resume DB" finishes what is
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
				return usageErr("batch takes one ensemble file, got %d arguments", len(args))
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
	fl.IntVar(&f.concurrency, "concurrency", defaultConcurrency, "run `N` inputs at a time")
	fl.StringVar(&f.stateFile, "state", "", "save every run and the batch in the state database `FILE` (finish it with --resume FILE)")
	fl.StringVar(&f.resume, "resume", "", "finish the batch saved in the state database `FILE`")
	fl.StringVar(&f.batchID, "batch-id", "", "the batch's `ID` in the state database (default: a new one; with --resume, its one unfinished batch)")
	fl.BoolVar(&f.force, "force", false, "with --resume, go on although the ensemble, inputs or responses file changed")
	s := &f.sharedFlags
	fl.StringVar(&s.responses, "responses", "", "inject agent responses from `FILE`: each run starts at the first response")
	fl.StringArrayVar(&s.profiles, "profiles", nil, "model profiles `FILE` (repeatable)")
	fl.IntVar(&s.maxTurns, "max-turns", 0, "override conversation_limits.max_total_turns")
	fl.DurationVar(&s.timeout, "timeout", 0, "override each run's timeout (e.g. 90s, 10m)")
	fl.IntVar(&s.parallel, "parallel", 0, "override conversation_limits.parallel_agent_limit")
	fl.IntVar(&s.maxTokens, "max-tokens", 0, "override conversation_limits.max_tokens, each run's token budget")
	fl.IntVar(&s.maxRequests, "max-requests", 0, "override conversation_limits.max_requests, each run's budget of model requests")
	fl.Float64Var(&s.maxCost, "max-cost", 0, "override conversation_limits.max_cost, each run's budget")
	fl.StringArrayVar(&s.live, "live", nil, "with --responses, let LLM `AGENT` call its real model though it has no responses (repeatable)")
	fl.BoolVar(&s.liveAll, "live-all", false, "with --responses, let every LLM agent without responses call its real model")
	fl.BoolVarP(&s.quiet, "quiet", "q", false, "no progress and no summary, only errors")
	f.temporal.register(cmd, false)
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

// batchSpec is what a batch saved with --state is (docs/cli.md#ensemble-batch):
// enough for --resume to go on as it started.
type batchSpec struct {
	Ensemble    state.FileRef  `json:"ensemble"`
	Inputs      state.FileRef  `json:"inputs"`
	Output      string         `json:"output"` // absolute, or "-"
	Responses   *state.FileRef `json:"responses,omitempty"`
	Profiles    []string       `json:"profiles,omitempty"`
	Options     state.Options  `json:"options"`
	Concurrency int            `json:"concurrency"`
	Live        []string       `json:"live,omitempty"`
	LiveAll     bool           `json:"live_all,omitempty"`
}

// readInputs reads and parses the inputs file (- standard input).
func readInputs(io *stdio, path string) ([]*batchInput, []byte, error) {
	var data []byte
	var err error
	name := path
	if path == "-" {
		name = "<stdin>"
		data, err = readUpTo(io.in, 1<<30)
	} else {
		data, err = os.ReadFile(path)
	}
	if err != nil {
		return nil, nil, usageErr("--inputs: %v", err)
	}
	inputs, err := parseInputs(name, data)
	if err != nil {
		return nil, nil, &exitError{code: engine.ExitUsage, err: err}
	}
	return inputs, data, nil
}

// batchFile is a file a batch reads, named for a message.
type batchFile struct{ what, path string }

// checkOutput refuses an output file that is one the batch reads (the
// inputs, the ensemble, the state database…), by any path to it: opening
// it would overwrite it before anything ran.
func checkOutput(out string, files []batchFile) error {
	if out == "-" {
		return nil
	}
	outAbs, _ := filepath.Abs(out)
	ost, oerr := os.Stat(out)
	for _, f := range files {
		if f.path == "" || f.path == "-" {
			continue
		}
		same := false
		if abs, err := filepath.Abs(f.path); err == nil && abs == outAbs {
			same = true
		} else if st, err := os.Stat(f.path); err == nil && oerr == nil && os.SameFile(st, ost) {
			same = true
		}
		if same {
			return usageErr("--out %s is %s: the results would overwrite it; give them a file of their own", out, f.what)
		}
	}
	return nil
}

// startBatch is `ensemble batch FILE`.
func startBatch(ctx context.Context, io *stdio, path string, f *batchFlags) error {
	read := []batchFile{{"the ensemble file", path}, {"the --inputs file", f.inputs},
		{"the --state database", f.stateFile}, {"the --responses file", f.responses}}
	for _, p := range f.profiles {
		read = append(read, batchFile{"a --profiles file", p})
	}
	if err := checkOutput(f.out, read); err != nil {
		return err
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
	inputs, data, err := readInputs(io, f.inputs)
	if err != nil {
		return err
	}
	lb, err := newLocalBatch(io, e, &f.sharedFlags)
	if err != nil {
		return err
	}
	if f.maxCost > 0 && !f.quiet && !anyPriced(e) {
		fmt.Fprintln(io.stderr(), "ensemble: warning: --max-cost is never reached: no model profile has pricing, so requests cost 0")
	}
	// The local engine runs each input; another engine would be another
	// runOneFunc here, the rest of the batch unchanged.
	b := &batchRun{inputs: inputs, runOne: lb.runOne, concurrency: f.concurrency}
	if f.temporal.addr != "" {
		return temporalBatch(ctx, io, e, path, f, b)
	}
	resume := ""
	if f.stateFile != "" {
		spec, err := f.spec(e, data)
		if err != nil {
			return err
		}
		if err := lb.create(io, f.stateFile, f.batchID, spec); err != nil {
			return err
		}
		defer lb.db.Close()
		b.save = lb.saveLine
		resume = io.program() + " batch --resume " + shellQuote(f.stateFile)
		if !f.quiet {
			fmt.Fprintf(io.stderr(), "ensemble: batch %s, saved in %s\n", lb.batch.ID, f.stateFile)
		}
	}
	out, closeOut, err := openOutput(io, f.out, false)
	if err != nil {
		return err
	}
	b.out = out
	return finishBatch(ctx, io, b, lb, closeOut, resume, f.quiet)
}

// finishBatch runs b, closes the output, marks a durable batch done, and
// prints the summary. lb is nil when another engine runs the inputs.
func finishBatch(ctx context.Context, io *stdio, b *batchRun, lb *localBatch, closeOut func() error, resume string, quiet bool) error {
	if !quiet && io.errIsTerminal() {
		b.progress = io.stderr()
	}
	st := b.run(ctx)
	if err := closeOut(); err != nil {
		st.errs = append(st.errs, fmt.Sprintf("writing the output: %v", err))
	}
	if lb != nil && lb.db != nil && !st.interrupted && len(st.errs) == 0 {
		if err := lb.db.FinishBatch(lb.batch, "done"); err != nil {
			st.errs = append(st.errs, err.Error())
		}
	}
	if !quiet {
		st.summary(io.stderr(), resume)
	} else {
		for _, e := range st.errs {
			fmt.Fprintf(io.stderr(), "ensemble: %s\n", e)
		}
	}
	if code := st.exitCode(); code != 0 {
		return &exitError{code: code}
	}
	return nil
}

// openOutput opens the output: standard output for "-", else the file,
// created (mode 0600: it holds the runs' conversations) or truncated, or
// with keep, opened for appending (a resumed batch's).
func openOutput(io *stdio, path string, keep bool) (io.Writer, func() error, error) {
	if path == "-" {
		return io.stdout(), func() error { return nil }, nil
	}
	flags := os.O_WRONLY | os.O_CREATE | os.O_TRUNC
	if keep {
		flags = os.O_WRONLY | os.O_CREATE | os.O_APPEND
	}
	file, err := os.OpenFile(path, flags, 0o600)
	if err != nil {
		return nil, nil, usageErr("--out: %v", err)
	}
	return io.secrets.Writer(file), file.Close, nil
}

// spec is the saved form of a new batch of e with the inputs data.
func (f *batchFlags) spec(e *ensemble.Ensemble, data []byte) (*batchSpec, error) {
	rf := runFlags{sharedFlags: f.sharedFlags}
	extra, err := rf.stateRefs()
	if err != nil {
		return nil, err
	}
	inputs, err := filepath.Abs(f.inputs)
	if err != nil {
		return nil, usageErr("--inputs: %v", err)
	}
	sum := sha256.Sum256(data)
	spec := &batchSpec{
		Ensemble:    state.FileRef{Name: e.Name, Path: e.Path, SHA256: e.Hash},
		Inputs:      state.FileRef{Path: inputs, SHA256: hex.EncodeToString(sum[:])},
		Output:      f.out,
		Responses:   extra.Responses,
		Profiles:    extra.Profiles,
		Options:     state.Options{MaxTurns: f.maxTurns, Parallel: f.parallel, MaxTokens: f.maxTokens, MaxRequests: f.maxRequests, MaxCost: f.maxCost},
		Concurrency: f.concurrency,
		Live:        f.live,
		LiveAll:     f.liveAll,
	}
	spec.Options.SetTimeout(f.timeout)
	if f.out != "-" {
		if spec.Output, err = filepath.Abs(f.out); err != nil {
			return nil, usageErr("--out: %v", err)
		}
	}
	return spec, nil
}

// localBatch runs a batch's inputs with the local engine, in this process:
// one engine.Run per input, each with injected responses of its own (every
// run starts at the first response), and with --state each saved as a run
// of the state database.
type localBatch struct {
	e      *ensemble.Ensemble
	runner runners.Runner // shared by the runs, but for injected responses
	opts   engine.Options

	// With --state: the database (one connection, so every use holds mu),
	// the batch, and the runs of the batch it holds already (resume).
	mu    sync.Mutex
	db    *store.DB
	batch *store.BatchInfo
	runs  map[string]*store.RunInfo
	extra *state.File // the responses and profiles files, for the runs' rows
}

func newLocalBatch(io *stdio, e *ensemble.Ensemble, s *sharedFlags) (*localBatch, error) {
	// Ask agents never ask at the terminal: runs go on at once; their
	// answers come from --responses.
	runner, err := buildRunner(io, e, s.responses, &s.liveFlags, true, false, askHost{batch: true})
	if err != nil {
		return nil, &exitError{code: engine.ExitUsage, err: err}
	}
	rf := runFlags{sharedFlags: *s}
	extra, err := rf.stateRefs()
	if err != nil {
		return nil, err
	}
	return &localBatch{e: e, runner: runner, extra: extra, opts: engine.Options{
		MaxTurns: s.maxTurns,
		Timeout:  s.timeout,
		Parallel: s.parallel,
		Budget:   s.budget(),
		Secrets:  io.secrets,
	}}, nil
}

// runnerFor is the runner of one run: injected responses taken from the
// first for each run.
func (l *localBatch) runnerFor() runners.Runner {
	if inj, ok := l.runner.(*runners.InjectedRunner); ok {
		return &runners.InjectedRunner{Responses: inj.Responses, Next: inj.Next, Simulate: inj.Simulate, Live: inj.Live}
	}
	return l.runner
}

// runOne is the local engine's runOneFunc.
func (l *localBatch) runOne(ctx context.Context, in *batchInput) (*engine.Result, error) {
	opts := l.opts
	opts.Runner = l.runnerFor()
	if l.db == nil {
		return engine.New(l.e, in.input, opts).Run(ctx), nil
	}
	return l.runDurable(ctx, in, opts)
}

// runID is the id of the run of input in in the state database: the
// batch's id and the input's position, from 1.
func (l *localBatch) runID(in *batchInput) string {
	return l.batch.ID + "." + strconv.Itoa(in.idx+1)
}
