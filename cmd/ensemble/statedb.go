package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"

	"github.com/ensemble-run/ensemble/engine"
	"github.com/ensemble-run/ensemble/ensemble"
	"github.com/ensemble-run/ensemble/report"
	"github.com/ensemble-run/ensemble/runners"
	"github.com/ensemble-run/ensemble/state"
	"github.com/ensemble-run/ensemble/store"
)

// syncEnv names the variable that makes every saved turn reach the disk
// before the next starts (docs/semantics.md#durable-runs).
const syncEnv = "ENSEMBLE_STATE_SYNC"

// storeSync reads $ENSEMBLE_STATE_SYNC: "normal" (the default) or "full".
func storeSync(io *stdio) (store.Sync, error) {
	v, _ := io.lookupEnv(syncEnv)
	switch strings.ToLower(strings.TrimSpace(v)) {
	case "", "normal":
		return store.SyncNormal, nil
	case "full":
		return store.SyncFull, nil
	}
	return "", usageErr("$%s must be normal or full, got %q", syncEnv, v)
}

// isNewDatabase reports whether --state path makes or adds to a state
// database: the file does not exist (or is empty), or is a database. An
// existing JSON state file goes on being written as JSON.
func isNewDatabase(path string) bool {
	fi, err := os.Stat(path)
	if errors.Is(err, fs.ErrNotExist) || err == nil && fi.Mode().IsRegular() && fi.Size() == 0 {
		return true
	}
	ok, _ := store.IsDatabase(path)
	return ok
}

// stateKeys maps an agent of e to the key of its outputs in the context.
func stateKeys(e *ensemble.Ensemble) func(string) string {
	return func(name string) string {
		if a := e.Agent(name); a != nil {
			return a.StateKey()
		}
		return name
	}
}

// durableDB is durable for a state database: a new run added to it (with
// --run-id or a new id), or the run being resumed from it, saved after
// every turn with only what the turn added.
func (f *runFlags) durableDB(io *stdio, e *ensemble.Ensemble, input string, opts engine.Options, extra *state.File) (*engine.Run, func(*engine.Result) error, error) {
	// The turns are saved behind the run (docs/semantics.md#durable-runs),
	// which waits for them before an execution that reaches outside the
	// process, and after a turn that had one.
	var w *store.Writer
	barrier := &runners.Barrier{Wait: func() error { return w.Wait() }}
	opts.Runner = barrier.Wrap(opts.Runner)
	opts.AfterTurn = barrier.AfterTurn(func(st *state.State) error { return w.SaveTurn(st) })
	var (
		r   *engine.Run
		db  *store.DB
		err error
	)
	file := func() *state.File {
		sf := r.File("")
		withRefs(sf, extra)
		return sf
	}
	if rs := f.resume; rs != nil {
		db = rs.db // resumeRun closes it
		opts.RunID = rs.run.ID
		r = engine.FromFile(e, rs.file, opts)
		if w, err = db.Continue(rs.run, file(), stateKeys(e)); err != nil {
			return nil, nil, usageErr("%v", err)
		}
	} else {
		sync, err := storeSync(io)
		if err != nil {
			return nil, nil, err
		}
		if db, err = store.Open(f.stateFile, true, sync); err != nil {
			return nil, nil, usageErr("--state: %v", err)
		}
		id := f.runID
		if id == "" {
			id = store.NewID()
		}
		opts.RunID = id
		r = engine.New(e, input, opts)
		w, err = db.Create(id, file(), stateKeys(e))
		var exists *store.ExistsError
		switch {
		case errors.As(err, &exists):
			db.Close()
			return nil, nil, usageErr("--state %s holds a run %s of %q that has not finished (%s done); continue it with\n  %s\nor start a new run with another --run-id",
				f.stateFile, id, exists.Run.Ensemble, report.Count(exists.Run.Turns, "turn"), io.resumeCommand(f.stateFile)+" --run-id "+shellQuote(id))
		case err != nil:
			db.Close()
			return nil, nil, usageErr("--state: %v", err)
		}
		f.newRunID = id
	}
	w.Background()
	final := func(res *engine.Result) error {
		defer func() {
			w.Close()
			if f.resume == nil {
				db.Close()
			}
		}()
		if err := w.Finish(r.State(), res.CompletionReason); err != nil {
			fmt.Fprintf(io.stderr(), "ensemble: %v\n", err)
			return &exitError{code: engine.ExitFailed}
		}
		f.resumeCmd = resumeRunCommand(io, db, f.stateFile, w.Run())
		return nil
	}
	return r, final, nil
}

// resumeRunCommand is the command that continues run of the database at
// path: with --run-id when a plain resume would pick another run.
func resumeRunCommand(io *stdio, db *store.DB, path string, run *store.RunInfo) string {
	cmd := io.resumeCommand(path)
	runs, err := db.Runs()
	if err != nil {
		return cmd + " --run-id " + shellQuote(run.ID)
	}
	for _, o := range runs {
		if o.ID != run.ID && o.Resumable() {
			return cmd + " --run-id " + shellQuote(run.ID)
		}
	}
	return cmd
}

// openRun opens the state database at path and picks a run: the one named
// by id, or else the one unfinished run (forResume) or the one run. With
// lock (a resume), the run is locked for this process before it is loaded.
// The caller closes the database.
func openRun(io *stdio, path, id string, forResume bool) (*store.DB, *store.RunInfo, *state.File, error) {
	sync := store.SyncNormal // what reads a run writes nothing: $ENSEMBLE_STATE_SYNC is not its business
	if forResume {
		var err error
		if sync, err = storeSync(io); err != nil {
			return nil, nil, nil, err
		}
	}
	db, err := store.Open(path, false, sync)
	if err != nil {
		return nil, nil, nil, &exitError{code: engine.ExitUsage, err: err}
	}
	run, err := pickRun(db, id, forResume)
	if err == nil && forResume {
		err = db.Lock(run)
	}
	var sf *state.File
	if err == nil {
		sf, err = db.Load(run)
	}
	if err != nil {
		db.Close()
		var ee *exitError
		if errors.As(err, &ee) {
			return nil, nil, nil, err
		}
		return nil, nil, nil, &exitError{code: engine.ExitUsage, err: err}
	}
	return db, run, sf, nil
}

// pickRun finds the run id names, or the one run the command means without
// an id; when that is ambiguous, the error lists the runs.
func pickRun(db *store.DB, id string, forResume bool) (*store.RunInfo, error) {
	runs, err := db.Runs()
	if err != nil {
		return nil, err
	}
	if id != "" {
		for _, r := range runs {
			if r.ID == id {
				return r, nil
			}
		}
		return nil, usageErr("state file %s holds no run %q; its runs:\n%s", db.Path(), id, runList(runs))
	}
	if len(runs) == 0 {
		return nil, usageErr("state file %s holds no run", db.Path())
	}
	if len(runs) == 1 {
		return runs[0], nil
	}
	if forResume {
		var unfinished []*store.RunInfo
		for _, r := range runs {
			if r.Resumable() {
				unfinished = append(unfinished, r)
			}
		}
		switch len(unfinished) {
		case 1:
			return unfinished[0], nil
		case 0:
			return nil, usageErr("state file %s holds %d runs, none unfinished; name one with --run-id:\n%s", db.Path(), len(runs), runList(runs))
		}
		return nil, usageErr("state file %s holds %d unfinished runs; name one with --run-id:\n%s", db.Path(), len(unfinished), runList(unfinished))
	}
	return nil, usageErr("state file %s holds %d runs; name one with --run-id:\n%s", db.Path(), len(runs), runList(runs))
}

// runList is a line per run: id, ensemble, turns, how it ended.
func runList(runs []*store.RunInfo) string {
	var b strings.Builder
	for _, r := range runs {
		fmt.Fprintf(&b, "  %s  (%s, %s, %s)\n", r.ID, r.Ensemble, report.Count(r.Turns, "turn"), runStatus(r.CompletionReason))
	}
	return strings.TrimSuffix(b.String(), "\n")
}

// runStatus is a completion reason as `state list` shows it.
func runStatus(reason string) string {
	if reason == "" {
		return "unfinished"
	}
	return reason
}
