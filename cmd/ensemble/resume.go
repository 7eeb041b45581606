package main

import (
	"context"
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/ensemble-run/ensemble/durable"
	"github.com/ensemble-run/ensemble/engine"
	"github.com/ensemble-run/ensemble/session"
)

// resumeFlags are the flags of `ensemble resume`: those of run but the
// input and --state, and --force.
type resumeFlags struct {
	sharedFlags
	force bool
	runID string // --run-id: which run of a database
	// fromTurn: --from-turn, a fork of the run from that turn (when
	// given: see forks).
	fromTurn int
	answerFlags
}

func newResumeCmd(io *stdio) *cobra.Command {
	var f resumeFlags
	cmd := &cobra.Command{
		Use:   "resume STATE [--run-id ID] [--from-turn N]",
		Short: "Continue a run saved with run --state",
		Long: `Continue a run saved with "run --state STATE" from its last completed turn.

The run goes on with the same ensemble file, input, injected responses, profiles
files and overrides (--max-turns, --timeout, --parallel, --max-tokens,
--max-requests, --max-cost) as it was started with; flags given here override
them, and are kept for later resumes. A turn that was interrupted runs again; a
completed turn never does. The state keeps being written to STATE. --output,
--stream and --report work as for run.

STATE is a state database (what run --state writes) or a JSON state file
(what earlier releases wrote, and state export prints): a database goes on
being written as a database, a JSON file as JSON. In a database holding
several runs, --run-id names the run; without it, the one unfinished run.

A run that ended waiting for input (exit 5) goes on with the answers given
with --answer AGENT=TEXT (repeatable) or --answers FILE; an answer for an
agent the run does not wait for is refused. A run stopped by its budget (exit
6) goes on when resumed with a higher cap (--max-cost, --max-tokens,
--max-requests).

Resume refuses when the ensemble file, or the responses file, changed since
the state was saved; --force resumes anyway.

--from-turn N forks the run instead: a new run of the database starts whose
first N turns are the run's (copied, not executed again; 0: from its input),
and goes on from there with the current ensemble file and the responses given
with --responses (or the run's, or live models), by the same rules as a
resume. The run forked is not changed, and may be one that is still going
(its committed turns are copied). The new run records its parent, run and
turn (state list shows it). Injected responses go on by agent: an agent that
ran twice in the turns copied takes its third response next.

` + exitCodesHelp,
		Args: io.args(1, 1, "one STATE file (a state database or a JSON state file)"),
		RunE: func(cmd *cobra.Command, args []string) error {
			return resumeRun(cmd.Context(), io, args[0], &f, cmd.Flags().Changed)
		},
	}
	f.sharedFlags.register(cmd, forResume)
	cmd.Flags().BoolVar(&f.force, "force", false, "resume even if the ensemble or responses file changed")
	cmd.Flags().StringVar(&f.runID, "run-id", "", "the `ID` of the run of the state database to resume (default: its one unfinished run)")
	cmd.Flags().IntVar(&f.fromTurn, "from-turn", 0, "fork the run: start a new run whose first `N` turns are the run's, copied, and go on from there (0: from its input)")
	f.answerFlags.register(cmd)
	return cmd
}

// resumeRun continues the run saved in the state file at path: the saved
// run's files and overrides, but for those given again on the command line.
func resumeRun(ctx context.Context, io *stdio, path string, rf *resumeFlags, changed func(string) bool) error {
	given, err := rf.answerFlags.parse()
	if err != nil {
		return err
	}
	sync, err := durable.SyncFrom(io.lookupEnv)
	if err != nil {
		return usageErr("%v", err)
	}
	at := durable.At{Path: path, ID: rf.runID, Fork: changed("from-turn"), FromTurn: rf.fromTurn, Sync: sync}
	p, err := durable.Resume(at, rf.options(io, given, changed))
	if err != nil {
		return io.resumeError(path, err)
	}
	defer p.Saved.Close()
	f := runFlags{sharedFlags: rf.sharedFlags, stateFile: path, resumed: p.Saved}
	if len(p.Changed) > 0 {
		fmt.Fprintf(io.err, "ensemble: warning: %v; resuming anyway (--force)\n", errors.Join(p.Changed...))
	}
	f.printWarnings(io, p.Ensemble)
	return execute(ctx, io, p.Ensemble, &f, f.frontOptions(io, false, true), func(ctx context.Context, opts session.Options, ro session.RunOptions) (*durable.Started, *durable.Run, error) {
		sess, r, err := p.Start(ctx, opts, ro)
		if err != nil {
			return nil, nil, io.startError(path, err, false)
		}
		return durable.StartedIn(sess, r), p.Save(), nil
	})
}

// options are the options of durable.Resume the flags ask for: the
// answers given, and what the flags given override of the saved run.
func (rf *resumeFlags) options(io *stdio, given map[string]string, changed func(string) bool) durable.ResumeOptions {
	o := durable.ResumeOptions{
		Force:     rf.force,
		Answers:   given,
		Budget:    rf.budget(),
		LookupEnv: io.lookupEnv,
		Loaded:    io.redactKeysOf,
	}
	if changed("max-turns") {
		o.MaxTurns = rf.maxTurns
	}
	if changed("timeout") {
		o.Timeout = rf.timeout
	}
	if changed("parallel") {
		o.Parallel = rf.parallel
	}
	if changed("profiles") {
		o.Profiles = rf.profiles
	}
	if changed("responses") {
		o.Responses = rf.responses
	}
	return o
}

// resumeError is the error of a run durable.Resume refused, for the
// command line: a flag a JSON state file does not take, a budget spent,
// files changed (each with what to do), or the state file's refusal.
func (s *stdio) resumeError(path string, err error) error {
	var jsonFile *durable.JSONFileError
	var changedFiles *durable.ChangedFilesError
	switch {
	case errors.As(err, &jsonFile) && jsonFile.Fork:
		return usageErr("--from-turn: %v", err)
	case errors.As(err, &jsonFile):
		return usageErr("--run-id: %s is a JSON state file, which holds one run: resume it without --run-id", path)
	case errors.Is(err, durable.ErrBudgetSpent):
		// Its stopped turn would run again and stop at the same cap, paying
		// again for the requests it makes before it (docs/semantics.md#budgets).
		return usageErr("%s: %v; %s", path, err, s.hint(err))
	case errors.As(err, &changedFiles):
		return &exitError{code: engine.ExitUsage, err: fmt.Errorf("%w\n%s", err, s.hint(err))}
	}
	return s.stateError(path, err, false)
}
