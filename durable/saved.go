package durable

import (
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/ensemble-run/ensemble/engine"
	"github.com/ensemble-run/ensemble/ensemble"
	"github.com/ensemble-run/ensemble/internal/report"
	"github.com/ensemble-run/ensemble/state"
	"github.com/ensemble-run/ensemble/store"
)

// Saved is a saved run found to be continued (Open): its state file, and
// in a state database its row, locked for this process until Close.
type Saved struct {
	Path string
	File *state.File
	// Info is the run's row in a state database; nil for a JSON state file.
	Info *store.RunInfo
	db   *store.DB
	cont *Run
	// fork: a fork of Info that Continue adds (OpenFork); Info is not
	// locked until then.
	fork bool
}

// Open finds the run to continue at path, a state database or a JSON state
// file: in a database, the run id names, or else its one unfinished run
// (or its one run), locked for this process; a JSON state file's one run
// (id must be ""). Close lets it go.
func Open(path, id string, sync store.Sync) (*Saved, error) {
	if isDB, _ := store.IsDatabase(path); !isDB {
		if id != "" && IsJSONFile(path) {
			return nil, fmt.Errorf("%s is a JSON state file, which holds one run: resume it without a run id", path)
		}
		sf, err := LoadFile(path)
		if err != nil {
			return nil, err
		}
		return &Saved{Path: path, File: sf}, nil
	}
	db, run, sf, err := openRun(path, id, true, sync)
	if err != nil {
		return nil, err
	}
	return &Saved{Path: path, File: sf, Info: run, db: db}, nil
}

// IsDatabase reports whether the run is one of a state database.
func (s *Saved) IsDatabase() bool { return s.db != nil }

// Continue prepares the saving of the run as it goes on, started with refs
// (which become the saved ones): in its database, or in its JSON state
// file, locked from now on; Begin then finds the file as Open read it, or
// refuses (another process continued it).
func (s *Saved) Continue(refs Refs) (*Run, error) {
	rf, err := refs.file()
	if err != nil {
		return nil, err
	}
	if s.fork && s.cont == nil {
		return s.continueFork(rf)
	}
	if s.db != nil {
		// The run's lock goes with it: its writer, or Abandon, lets it go.
		s.cont = &Run{path: s.Path, refs: rf, db: s.db, id: s.Info.ID, info: s.Info, behind: true, locked: true}
		return s.cont, nil
	}
	lk, err := state.Lock(s.Path)
	if err != nil {
		return nil, err
	}
	return &Run{path: s.Path, refs: rf, lock: lk, resumed: s.File}, nil
}

// Close lets the run go (its lock) and closes its database, once the run
// that continued it has finished.
func (s *Saved) Close() {
	if s.db == nil {
		return
	}
	if s.cont == nil {
		if !s.fork {
			s.db.Unlock(s.Info)
		}
	} else {
		s.cont.Abandon() // nothing, once it has finished
	}
	s.db.Close()
}

// Check refuses e, the saved run's ensemble as it loads now, when the
// run's state does not fit it (a *state.FileError), and returns the files
// of the run that changed since it was saved, each a *engine.ChangedError:
// its ensemble file, and its responses file when responses is that file
// (not one given in its place). A run that goes on anyway continues a
// different workflow.
func (s *Saved) Check(e *ensemble.Ensemble, responses string) ([]error, error) {
	if err := engine.CheckState(e, s.File); err != nil {
		return nil, &state.FileError{Path: s.Path, Err: err}
	}
	var errs []error
	if err := engine.CheckEnsemble(e, s.File); err != nil {
		errs = append(errs, err)
	}
	if r := s.File.Responses; r != nil && responses == r.Path {
		sum, err := state.HashFile(responses)
		if err != nil {
			return nil, fmt.Errorf("the responses file of the saved run: %w (give another with --responses)", err)
		}
		if sum != r.SHA256 {
			errs = append(errs, &engine.ChangedError{What: "responses file", Path: responses, Saved: r.SHA256, Current: sum})
		}
	}
	return errs, nil
}

// LoadError explains err, why the ensemble file of the saved run does not
// load: it changed since (or went away), or something it needs did.
func (s *Saved) LoadError(err error) error {
	ref := s.File.Ensemble
	why := "the ensemble file of the saved run does not load"
	switch sum, herr := state.HashFile(ref.Path); {
	case herr != nil:
		why = "the ensemble file of the saved run cannot be read"
	case sum != ref.SHA256:
		why = fmt.Sprintf("the ensemble file %s has changed since the state was saved, and no longer loads", ref.Path)
	}
	return fmt.Errorf("cannot resume %s: %s:\n%w", s.Path, why, err)
}

// EnsembleFileError is an ensemble file given where a state file was
// expected.
type EnsembleFileError struct{ Path string }

func (e *EnsembleFileError) Error() string {
	return fmt.Sprintf("%s is an ensemble file, not a state file", e.Path)
}

// IsJSONFile reports whether path is a file that is read as a JSON state
// file, one run without an id: a regular file, not empty, and not a
// database. A file that does not exist, a folder and an empty file are
// none (an empty file holds no run: reading it says so, and a run with
// --state makes it a database).
func IsJSONFile(path string) bool {
	fi, err := os.Stat(path)
	if err != nil || !fi.Mode().IsRegular() || fi.Size() == 0 {
		return false
	}
	isDB, err := store.IsDatabase(path)
	return err == nil && !isDB
}

// LoadFile loads the JSON state file at path; an ensemble file given by
// mistake is an *EnsembleFileError.
func LoadFile(path string) (*state.File, error) {
	sf, err := state.Load(path)
	if err != nil {
		if data, rerr := ensemble.ReadFile(path); rerr == nil && ensemble.LooksLikeEnsemble(data) {
			return nil, &EnsembleFileError{Path: path}
		}
		return nil, err
	}
	return sf, nil
}

// Load reads a saved run without locking it (nothing is written): the run
// id names in a state database, or its one run; a JSON state file's one
// run. info is the run's row in a database (nil for a JSON file).
func Load(path, id string) (sf *state.File, info *store.RunInfo, err error) {
	if isDB, _ := store.IsDatabase(path); !isDB {
		if id != "" && IsJSONFile(path) {
			return nil, nil, fmt.Errorf("%s is a JSON state file, which holds one run", path)
		}
		sf, err := LoadFile(path)
		return sf, nil, err
	}
	// What reads a run writes nothing: $ENSEMBLE_STATE_SYNC is not its
	// business.
	db, run, sf, err := openRun(path, id, false, store.SyncNormal)
	if err != nil {
		return nil, nil, err
	}
	db.Close()
	return sf, run, nil
}

// List lists the runs of a state database, or the one of a JSON state
// file (with the id "-").
func List(path string) ([]*store.RunInfo, error) {
	if isDB, _ := store.IsDatabase(path); isDB {
		db, err := store.Open(path, false, store.SyncNormal)
		if err != nil {
			return nil, err
		}
		defer db.Close()
		return db.Runs()
	}
	sf, err := LoadFile(path)
	if err != nil {
		return nil, err
	}
	return []*store.RunInfo{{ID: "-", Ensemble: sf.Ensemble.Name, Saved: sf.SavedAt, Turns: sf.State.TurnCount, CompletionReason: sf.CompletionReason}}, nil
}

// openRun opens the state database at path and picks a run: the one named
// by id, or else the one unfinished run (forResume) or the one run. A run
// to resume is locked for this process before it is loaded. The caller
// closes the database.
func openRun(path, id string, forResume bool, sync store.Sync) (*store.DB, *store.RunInfo, *state.File, error) {
	db, err := store.Open(path, false, sync)
	if err != nil {
		return nil, nil, nil, err
	}
	run, err := pickRun(db, id, forResume)
	if err == nil && forResume {
		err = db.Lock(run)
	}
	var sf *state.File
	if err == nil {
		if sf, err = db.Load(run); err != nil && forResume {
			db.Unlock(run)
		}
	}
	if err != nil {
		db.Close()
		return nil, nil, nil, err
	}
	return db, run, sf, nil
}

// ErrPick is the error of a run id that names no run, or of no id where
// the database holds no run, or several, that the command could mean.
var ErrPick = errors.New("which run")

// pickRun finds the run id names, or the one run the command means without
// an id; when that is ambiguous, the error lists the runs.
func pickRun(db *store.DB, id string, forResume bool) (*store.RunInfo, error) {
	runs, err := db.Runs()
	if err != nil {
		return nil, err
	}
	pick := func(format string, args ...any) error {
		return &pickError{msg: fmt.Sprintf(format, args...)}
	}
	if id != "" {
		for _, r := range runs {
			if r.ID == id {
				return r, nil
			}
		}
		return nil, pick("state file %s holds no run %q; its runs:\n%s", db.Path(), id, RunList(runs))
	}
	if len(runs) == 0 {
		return nil, pick("state file %s holds no run", db.Path())
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
			return nil, pick("state file %s holds %d runs, none unfinished; name one with --run-id:\n%s", db.Path(), len(runs), RunList(runs))
		}
		return nil, pick("state file %s holds %d unfinished runs; name one with --run-id:\n%s", db.Path(), len(unfinished), RunList(unfinished))
	}
	return nil, pick("state file %s holds %d runs; name one with --run-id:\n%s", db.Path(), len(runs), RunList(runs))
}

type pickError struct{ msg string }

func (e *pickError) Error() string { return e.msg }
func (e *pickError) Unwrap() error { return ErrPick }

// RunList is a line per run: id, ensemble, turns, how it ended.
func RunList(runs []*store.RunInfo) string {
	var b strings.Builder
	for _, r := range runs {
		fmt.Fprintf(&b, "  %s  (%s, %s, %s)\n", r.ID, r.Ensemble, report.Count(r.Turns, "turn"), Status(r.CompletionReason))
	}
	return strings.TrimSuffix(b.String(), "\n")
}

// Status is a completion reason as `state list` shows it: "unfinished"
// while the run goes on, or was killed.
func Status(reason string) string {
	if reason == "" {
		return "unfinished"
	}
	return reason
}

// Result is the result of a saved run as of its last completed turn, as
// engine.Run.Result builds it: no agent runs, and the ensemble file is not
// read (it may have changed or gone). Its errors and usage include what
// the run's last invocation reported of a turn it cut short
// (engine.SavedResult). Its duration is the time from the
// run's start to its last save, when info (its row in a database) says.
func Result(sf *state.File, info *store.RunInfo) *engine.Result {
	e := &ensemble.Ensemble{Name: sf.Ensemble.Name, Path: sf.Ensemble.Path, Hash: sf.Ensemble.SHA256}
	_, res := engine.SavedResult(e, sf)
	res.DurationSeconds, res.Parent = 0, sf.Parent
	if info != nil && !info.Started.IsZero() {
		res.DurationSeconds = max(0, info.Saved.Sub(info.Started).Seconds())
	}
	return res
}

// ResultOf is the result of the saved run sf as `state show` prints it:
// Result, and what can be read only against its ensemble e (nil: the file
// no longer loads), when sf still fits e: the ensemble's output, what the
// run waits for, and the agents a completed run held back. Every door
// that shows a saved run (state show, serve) builds it here.
func ResultOf(e *ensemble.Ensemble, sf *state.File, info *store.RunInfo) *engine.Result {
	res := Result(sf, info)
	if e == nil || engine.CheckState(e, sf) != nil {
		return res
	}
	res.SetOutput(e)
	switch sf.CompletionReason {
	case engine.AwaitingInput:
		res.PendingInput = engine.FromFile(e, sf, engine.Options{}).PendingInput()
	case engine.Completed, engine.ExpectationFailed:
		res.HeldBack = engine.HeldBackIn(e, sf.State)
	}
	return res
}

// Pending is what the saved run sf of e waits for
// (docs/semantics.md#ask-agents-that-wait); nil when its state does not fit
// e (the file changed).
func Pending(e *ensemble.Ensemble, sf *state.File) []engine.PendingInput {
	if engine.CheckState(e, sf) != nil {
		return nil
	}
	return engine.FromFile(e, sf, engine.Options{}).PendingInput()
}
