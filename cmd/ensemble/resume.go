package main

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/ensemble-run/ensemble/engine"
	"github.com/ensemble-run/ensemble/ensemble"
	"github.com/ensemble-run/ensemble/report"
	"github.com/ensemble-run/ensemble/state"
	"github.com/ensemble-run/ensemble/store"
)

// resumeFlags are the flags of `ensemble resume`: those of run but the
// input and --state, and --force.
type resumeFlags struct {
	sharedFlags
	force bool
	runID string // --run-id: which run of a database
	answerFlags
}

func newResumeCmd(io *stdio) *cobra.Command {
	var f resumeFlags
	cmd := &cobra.Command{
		Use:   "resume STATE [--run-id ID]",
		Short: "Continue a run saved with run --state",
		Long: `Continue a run saved with "ensemble run --state STATE" from its last completed turn.

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
with --answer AGENT=TEXT (repeatable) or --answers FILE.yaml; an answer for an
agent the run does not wait for is refused. A run stopped by its budget (exit
6) goes on when resumed with a higher cap (--max-cost, --max-tokens,
--max-requests).

Resume refuses when the ensemble file, or the responses file, changed since
the state was saved; --force resumes anyway.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return resumeRun(cmd.Context(), io, args[0], &f, cmd.Flags().Changed)
		},
	}
	f.sharedFlags.register(cmd, true)
	cmd.Flags().BoolVar(&f.force, "force", false, "resume even if the ensemble or responses file changed")
	cmd.Flags().StringVar(&f.runID, "run-id", "", "the run of the state database to resume (default: its one unfinished run)")
	f.answerFlags.register(cmd)
	return cmd
}

// resumeInfo is what runEnsemble needs to continue a saved run.
type resumeInfo struct {
	path  string // the state file
	file  *state.File
	force bool
	// db is the open state database holding the run, locked by this
	// process; nil for a JSON state file.
	db  *store.DB
	run *store.RunInfo
	// checkResponses: the responses file is the saved run's, so it must not
	// have changed.
	checkResponses bool
}

// resumeRun continues the run saved in the state file at path: the saved
// run's files and overrides, but for those given again on the command line.
func resumeRun(ctx context.Context, io *stdio, path string, rf *resumeFlags, changed func(string) bool) error {
	answers, err := rf.answerFlags.parse()
	if err != nil {
		return err
	}
	var rs *resumeInfo
	if isDB, _ := store.IsDatabase(path); isDB {
		db, run, sf, err := openRun(io, path, rf.runID, true)
		if err != nil {
			return err
		}
		defer db.Close()
		rs = &resumeInfo{path: path, file: sf, force: rf.force, db: db, run: run}
	} else {
		if rf.runID != "" {
			return usageErr("--run-id: %s is a JSON state file, which holds one run: resume it without --run-id", path)
		}
		sf, err := loadStateFile(path)
		if err != nil {
			return err
		}
		rs = &resumeInfo{path: path, file: sf, force: rf.force}
	}
	sf := rs.file
	if sf.CompletionReason == engine.BudgetExceeded && !rf.force &&
		!changed("max-cost") && !changed("max-tokens") && !changed("max-requests") {
		// Its stopped turn would run again and stop at the same cap, paying
		// again for the requests it makes before it (docs/semantics.md#budgets).
		return usageErr("%s: the run stopped because a budget was spent; resuming as it is would replay the stopped turn and stop again: "+
			"raise the run's cap with --max-cost, --max-tokens or --max-requests, or raise the file's limits and resume with --force", path)
	}
	f := runFlags{
		sharedFlags: rf.sharedFlags,
		stateFile:   path,
		resume:      rs,
		answers:     answers,
	}
	if !changed("max-turns") {
		f.maxTurns = sf.Options.MaxTurns
	}
	if !changed("timeout") {
		f.timeout = sf.Options.Timeout()
	}
	if !changed("parallel") {
		f.parallel = sf.Options.Parallel
	}
	if !changed("profiles") {
		f.profiles = sf.Profiles
	}
	if !changed("responses") && sf.Responses != nil {
		f.responses = sf.Responses.Path
		f.resume.checkResponses = true
	}
	f.recording.resumeFrom(sf.Options.Recording)
	return runEnsemble(ctx, io, sf.Ensemble.Path, &f, false)
}

// loadError explains why the ensemble file of a saved run does not load:
// it changed since (or went away), or something it needs did.
func (rs *resumeInfo) loadError(err error) error {
	ref := rs.file.Ensemble
	why := "the ensemble file of the saved run does not load"
	switch sum, herr := state.HashFile(ref.Path); {
	case herr != nil:
		why = "the ensemble file of the saved run cannot be read"
	case sum != ref.SHA256:
		why = fmt.Sprintf("the ensemble file %s has changed since the state was saved, and no longer loads", ref.Path)
	}
	return fmt.Errorf("cannot resume %s: %s:\n%w", rs.path, why, err)
}

// durable wires --state into a run of e: it prepares the run (a new one, or
// the saved one when resuming), writes the state once before the first turn
// (so that a run killed in its first turn can be resumed), and after every
// completed turn. The returned function writes the final state, with the
// completion reason; it reports its own errors on stderr and then returns a
// silent exit error.
func (f *runFlags) durable(io *stdio, e *ensemble.Ensemble, input string, opts engine.Options) (*engine.Run, func(*engine.Result) error, error) {
	if rs := f.resume; rs != nil {
		if err := checkResume(io, e, f.responses, rs); err != nil {
			return nil, nil, err
		}
		if err := checkAnswers(e, rs.file, f.answers); err != nil {
			return nil, nil, err
		}
	}
	if f.stateFile == "" {
		return engine.New(e, input, opts), func(*engine.Result) error { return nil }, nil
	}
	extra, err := f.stateRefs()
	if err != nil {
		return nil, nil, err
	}
	if rs := f.resume; rs != nil && rs.db != nil || rs == nil && isNewDatabase(f.stateFile) {
		return f.durableDB(io, e, input, opts, extra)
	}
	if f.runID != "" && f.resume == nil {
		return nil, nil, usageErr("--run-id: --state %s is a JSON state file, which holds one run; name a state database", f.stateFile)
	}
	// A JSON state file (docs/semantics.md#durable-runs): written whole
	// after every turn, as earlier releases did.
	lk, err := state.Lock(f.stateFile)
	if err != nil {
		return nil, nil, usageErr("--state: %v", err)
	}
	if err := f.checkStateFile(io); err != nil {
		lk.Unlock()
		return nil, nil, err
	}
	var r *engine.Run
	save := func(reason string) error {
		sf := r.File(reason)
		withRefs(sf, extra)
		return lk.Save(sf)
	}
	opts.AfterTurn = func(*state.State) error { return save("") }
	if f.resume != nil {
		r = engine.FromFile(e, f.resume.file, opts)
	} else {
		r = engine.New(e, input, opts)
	}
	if err := save(""); err != nil {
		lk.Unlock()
		return nil, nil, usageErr("--state: %v", err)
	}
	final := func(res *engine.Result) error {
		defer lk.Unlock()
		if err := save(res.CompletionReason); err != nil {
			fmt.Fprintf(io.stderr(), "ensemble: %v\n", err)
			return &exitError{code: engine.ExitFailed}
		}
		return nil
	}
	return r, final, nil
}

// checkStateFile runs with the state file locked. A new run must not start
// over a state file that holds an unfinished run (it would be lost), or over
// a file that is not a state file at all (a mistyped path must not clobber a
// document). A resumed run must find the file as it read it before the
// lock: another process may have continued it in between.
func (f *runFlags) checkStateFile(io *stdio) error {
	path := f.stateFile
	sf, err := state.Load(path)
	if rs := f.resume; rs != nil {
		if err != nil || !sf.SavedAt.Equal(rs.file.SavedAt) {
			return usageErr("%s was changed by another ensemble process while this one read it: run ensemble resume again", path)
		}
		return nil
	}
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil
	case err != nil:
		return usageErr("--state: %v\nrefusing to overwrite it: name a new file, or remove this one", err)
	case sf.Resumable():
		return usageErr("--state %s holds a run of %q that has not finished (%s done); continue it with\n  %s\nor remove the file to start over",
			path, sf.Ensemble.Name, report.Count(sf.State.TurnCount, "turn"), io.resumeCommand(path))
	}
	return nil
}

// stateRefs names the responses and profiles files by absolute path (and the
// responses file by hash), for the state file.
func (f *runFlags) stateRefs() (*state.File, error) {
	var sf state.File
	if f.responses != "" {
		abs, err := filepath.Abs(f.responses)
		if err != nil {
			return nil, usageErr("--responses: %v", err)
		}
		sum, err := state.HashFile(abs)
		if err != nil {
			return nil, usageErr("--responses: %v", err)
		}
		sf.Responses = &state.FileRef{Path: abs, SHA256: sum}
	}
	rec, err := f.recording.saved()
	if err != nil {
		return nil, usageErr("%v", err)
	}
	sf.Options.Recording = rec
	for _, p := range f.profiles {
		abs, err := filepath.Abs(p)
		if err != nil {
			return nil, usageErr("--profiles: %v", err)
		}
		sf.Profiles = append(sf.Profiles, abs)
	}
	return &sf, nil
}

// withRefs adds to sf, a run's state file, what the command line gave
// beside the ensemble (extra, from stateRefs).
func withRefs(sf, extra *state.File) {
	sf.Responses, sf.Profiles = extra.Responses, extra.Profiles
	sf.Options.Recording = extra.Options.Recording
}

// checkResume refuses to continue a run whose state does not fit its
// ensemble and, unless --force, one whose ensemble or responses file has
// changed since its state was saved.
func checkResume(io *stdio, e *ensemble.Ensemble, responses string, rs *resumeInfo) error {
	if err := engine.CheckState(e, rs.file); err != nil {
		return &exitError{code: engine.ExitUsage, err: &state.FileError{Path: rs.path, Err: err}}
	}
	var errs []error
	if err := engine.CheckEnsemble(e, rs.file); err != nil {
		errs = append(errs, err)
	}
	if rs.checkResponses {
		switch sum, err := state.HashFile(responses); {
		case err != nil:
			return usageErr("the responses file of the saved run: %v (give another with --responses)", err)
		case sum != rs.file.Responses.SHA256:
			errs = append(errs, &engine.ChangedError{What: "responses file", Path: responses, Saved: rs.file.Responses.SHA256, Current: sum})
		}
	}
	if len(errs) == 0 {
		return nil
	}
	if rs.force {
		fmt.Fprintf(io.err, "ensemble: warning: %v; resuming anyway (--force)\n", errors.Join(errs...))
		return nil
	}
	return &exitError{code: engine.ExitUsage, err: fmt.Errorf("%w\nresuming would continue the run with a different workflow; use --force to resume anyway",
		errors.Join(errs...))}
}
