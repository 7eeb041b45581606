// Package durable keeps runs across processes
// (docs/semantics.md#durable-runs): at a state path of either format, a
// state database (package store: a row a turn, several runs in one file)
// or a JSON state file of earlier releases (rewritten whole after every
// turn), it creates a run or finds one to continue, saves it after every
// turn and when it ends, and reads it back.
//
// A *Run is the session.Saver of the run it saves:
//
//	d, err := durable.Create("runs.db", "", durable.Refs{}, store.SyncNormal)
//	r, err := sess.Start(input, session.RunOptions{Save: d, RunID: d.ID()})
//	res, err := r.Run(ctx)           // saved after every turn, and at the end
//
//	saved, err := durable.Open("runs.db", "", store.SyncNormal) // the one unfinished run, locked
//	d, err = saved.Continue(durable.Refs{})
//	r, err = sess.Resume(saved.File, session.RunOptions{Save: d})
//
// A front door does those steps in one call each: New and its Start for a
// new run (saved or not, played here or, with NewOptions.Temporal, on a
// Temporal cluster when the program imports package temporalengine),
// Resume (or Prepare) and its Start for a saved one.
//
// Part of the public API (go doc github.com/ensemble-run/ensemble).
package durable

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/ensemble-run/ensemble/agent"
	"github.com/ensemble-run/ensemble/ensemble"
	"github.com/ensemble-run/ensemble/internal/barrier"
	"github.com/ensemble-run/ensemble/internal/report"
	"github.com/ensemble-run/ensemble/state"
	"github.com/ensemble-run/ensemble/store"
)

// SyncEnv names the variable that makes every saved turn reach the disk
// before the next starts (docs/semantics.md#durable-runs).
const SyncEnv = "ENSEMBLE_STATE_SYNC"

// SyncFrom reads $ENSEMBLE_STATE_SYNC through lookup (nil: os.LookupEnv):
// "normal" (the default) or "full".
func SyncFrom(lookup func(string) (string, bool)) (store.Sync, error) {
	if lookup == nil {
		lookup = os.LookupEnv
	}
	v, _ := lookup(SyncEnv)
	switch strings.ToLower(strings.TrimSpace(v)) {
	case "", "normal":
		return store.SyncNormal, nil
	case "full":
		return store.SyncFull, nil
	}
	return "", fmt.Errorf("$%s must be normal or full, got %q", SyncEnv, v)
}

// Refs are what a run was started with beside its ensemble, its input and
// its limits: saved with it, so that a resume goes on with the same.
type Refs struct {
	// Responses is the injected responses file ("": none), saved by
	// absolute path and sha256: a resume refuses it changed.
	Responses string
	// Profiles are the profiles files, saved by absolute path.
	Profiles []string
	// Recording is the run's recording, as a resume records or replays.
	Recording *state.Recording
}

// file is the refs as a state file holds them (absolute paths, the
// responses file hashed).
func (r Refs) file() (*state.File, error) {
	var sf state.File
	if r.Responses != "" {
		abs, err := filepath.Abs(r.Responses)
		if err != nil {
			return nil, fmt.Errorf("--responses: %w", err)
		}
		sum, err := state.HashFile(abs)
		if err != nil {
			return nil, fmt.Errorf("--responses: %w", err)
		}
		sf.Responses = &state.FileRef{Path: abs, SHA256: sum}
	}
	sf.Options.Recording = r.Recording
	for _, p := range r.Profiles {
		abs, err := filepath.Abs(p)
		if err != nil {
			return nil, fmt.Errorf("--profiles: %w", err)
		}
		sf.Profiles = append(sf.Profiles, abs)
	}
	return &sf, nil
}

// Resolved are refs as a saved run holds them (Resolve): the files by
// absolute path, the responses file hashed.
type Resolved struct{ f *state.File }

// Resolve reads what refs name once, for the many runs of a batch
// (CreateIn, ContinueIn): hashing the responses file for each would read
// it again for each.
func (r Refs) Resolve() (Resolved, error) {
	f, err := r.file()
	return Resolved{f}, err
}

// SavedRefs are the refs a saved run was started with (the profiles and
// responses files by the absolute paths saved).
func SavedRefs(f *state.File) Refs {
	r := Refs{Profiles: f.Profiles, Recording: f.Options.Recording}
	if f.Responses != nil {
		r.Responses = f.Responses.Path
	}
	return r
}

// withRefs adds to sf, a run's state file, what refs name.
func withRefs(sf, refs *state.File) *state.File {
	sf.Responses, sf.Profiles = refs.Responses, refs.Profiles
	sf.Options.Recording = refs.Options.Recording
	return sf
}

// SavesInDatabase reports whether a new run at path goes into a state
// database: the file does not exist (or is empty), or is one. An existing
// JSON state file goes on being written as JSON.
func SavesInDatabase(path string) bool {
	fi, err := os.Stat(path)
	if errors.Is(err, fs.ErrNotExist) || err == nil && fi.Mode().IsRegular() && fi.Size() == 0 {
		return true
	}
	ok, _ := store.IsDatabase(path)
	return ok
}

// UnfinishedError is a new run refused because it would take the place of
// a run that has not finished: the JSON state file's, or the run with the
// same id in a database.
type UnfinishedError struct {
	Path     string
	ID       string // the run's id in a database; "" for a JSON state file
	Ensemble string
	Turns    int
}

func (e *UnfinishedError) Error() string {
	if e.ID == "" {
		return fmt.Sprintf("%s holds a run of %q that has not finished (%s done)", e.Path, e.Ensemble, report.Count(e.Turns, "turn"))
	}
	return fmt.Sprintf("%s holds a run %s of %q that has not finished (%s done)", e.Path, e.ID, e.Ensemble, report.Count(e.Turns, "turn"))
}

// ErrChanged is the error of a JSON state file that another process
// changed (continued the run) between its reading and its locking: resume
// it again.
var ErrChanged = errors.New("changed by another ensemble process while this one read it")

// Run is a run being saved: the session.Saver of a new run (Create) or of
// one that goes on (Saved.Continue).
type Run struct {
	path string
	refs *state.File

	// A state database: the run's id, the database (shared, by the runs
	// of a batch, whose every use holds its lock: store.DB.Hold), the run
	// to continue (nil for a new one).
	db      *store.DB
	ownDB   bool
	shared  bool
	id      string
	info    *store.RunInfo
	w       *store.Writer
	behind  bool // the turns are saved behind the run, through the barrier
	barrier *barrier.Barrier
	save    func(*state.State) error // the barrier's AfterTurn
	// locked: info is locked for this run, which lets it go (Abandon)
	// unless a writer took it (the writer's Close does).
	locked bool

	// A JSON state file: its lock, the file as it stands, and for a resumed
	// run the file as it was read (another process must not have changed
	// it since).
	lock    *state.Locked
	sf      *state.File
	resumed *state.File
}

// Create prepares the saving of a new run at path: a state database (a new
// file, an empty one, or a database, to which the run is added as id, or
// as a new id when id is ""), or an existing JSON state file, which a run
// that has finished may be written over. The run is saved once it begins
// (session.Saver).
func Create(path, id string, refs Refs, sync store.Sync) (*Run, error) {
	rf, err := refs.file()
	if err != nil {
		return nil, err
	}
	if SavesInDatabase(path) {
		db, err := store.Open(path, true, sync)
		if err != nil {
			return nil, err
		}
		if id == "" {
			id = store.NewID()
		}
		return &Run{path: path, refs: rf, db: db, ownDB: true, id: id, behind: true}, nil
	}
	if id != "" {
		return nil, fmt.Errorf("%s is a JSON state file, which holds one run; name a state database for a run id", path)
	}
	lk, err := state.Lock(path)
	if err != nil {
		return nil, err
	}
	// A new run must not start over a file that holds an unfinished run
	// (it would be lost), or over a file that is not a state file at all (a
	// mistyped path must not clobber a document).
	switch sf, err := state.Load(path); {
	case errors.Is(err, fs.ErrNotExist):
	case err != nil:
		lk.Unlock()
		return nil, fmt.Errorf("%w\nrefusing to overwrite it: name a new file, or remove this one", err)
	case sf.Resumable():
		lk.Unlock()
		return nil, &UnfinishedError{Path: path, Ensemble: sf.Ensemble.Name, Turns: sf.State.TurnCount}
	}
	return &Run{path: path, refs: rf, lock: lk}, nil
}

// CreateIn prepares a new run id in db, an open state database shared by
// several runs at once (a batch's), whose every use holds its lock
// (store.DB.Hold): each turn is saved before the next starts.
func CreateIn(db *store.DB, id string, refs Resolved) (*Run, error) {
	return &Run{path: db.Path(), refs: refs.f, db: db, shared: true, id: id}, nil
}

// ContinueIn prepares info, a run of db (shared as in CreateIn), to go on
// from its last completed turn: it locks it and returns its saved state.
func ContinueIn(db *store.DB, info *store.RunInfo, refs Resolved) (*Run, *state.File, error) {
	db.Hold()
	defer db.Release()
	if err := db.Lock(info); err != nil {
		return nil, nil, err
	}
	sf, err := db.Load(info)
	if err != nil {
		db.Unlock(info)
		return nil, nil, err
	}
	return &Run{path: db.Path(), refs: refs.f, db: db, shared: true, id: info.ID, info: info, locked: true}, sf, nil
}

// ID is the run's id in its database; "" for a JSON state file.
func (d *Run) ID() string { return d.id }

// Path is the state path the run is saved at.
func (d *Run) Path() string { return d.path }

// IsDatabase reports whether the run is saved in a state database.
func (d *Run) IsDatabase() bool { return d.db != nil }

func (d *Run) hold() {
	if d.shared {
		d.db.Hold()
	}
}

func (d *Run) release() {
	if d.shared {
		d.db.Release()
	}
}

// Begin writes the run as it stands, before its first turn (session.Saver).
func (d *Run) Begin(e *ensemble.Ensemble, f *state.File) error {
	f = withRefs(f, d.refs)
	if d.db == nil {
		if d.resumed != nil {
			// Another process may have continued the file since it was read.
			if now, err := state.Load(d.path); err != nil || !now.SavedAt.Equal(d.resumed.SavedAt) {
				return fmt.Errorf("%s: %w", d.path, ErrChanged)
			}
		}
		d.sf = f
		return d.lock.Save(f)
	}
	keys := func(name string) string {
		if a := e.Agent(name); a != nil {
			return a.StateKey()
		}
		return name
	}
	// A shared database's writer holds its lock itself, around its
	// statements only (store.DB.CreateShared).
	var err error
	switch {
	case d.info != nil && d.shared:
		d.w, err = d.db.ContinueShared(d.info, f, keys)
	case d.info != nil:
		d.w, err = d.db.Continue(d.info, f, keys)
	case d.shared:
		d.w, err = d.db.CreateShared(d.id, f, keys)
	default:
		d.w, err = d.db.Create(d.id, f, keys)
	}
	if d.info == nil {
		var exists *store.ExistsError
		if errors.As(err, &exists) {
			err = &UnfinishedError{Path: d.path, ID: d.id, Ensemble: exists.Run.Ensemble, Turns: exists.Run.Turns}
		}
	}
	if err != nil {
		return err
	}
	d.locked = false // the writer's now
	if d.behind {
		d.w.Background()
	}
	return nil
}

// Wrap holds back, in a run whose turns are saved behind it, every
// execution that reaches outside the process until the turns before it
// are saved (barrier.Barrier).
//
// A run of a database whose runs commit together (store.DB.GroupCommit:
// a batch's, a server's) is held back the same way: the barrier commits
// what the database holds.
func (d *Run) Wrap(r agent.Runner) agent.Runner {
	switch {
	case d.behind:
		d.barrier = &barrier.Barrier{Wait: func() error { return d.w.Wait() }}
		d.save = d.barrier.AfterTurn(func(st *state.State) error { return d.w.SaveTurn(st) })
	case d.db != nil && d.db.Grouped():
		d.barrier = &barrier.Barrier{Wait: func() error {
			d.hold()
			defer d.release()
			return d.db.Flush()
		}}
		d.save = d.barrier.AfterTurn(func(st *state.State) error { return d.w.SaveTurn(st) })
	default:
		return r
	}
	return d.barrier.Wrap(r)
}

// AfterTurn saves a committed turn.
func (d *Run) AfterTurn(st *state.State) error {
	switch {
	case d.db == nil:
		d.sf.State, d.sf.CompletionReason, d.sf.Stopped = st, "", nil
		return d.lock.Save(d.sf)
	case d.save != nil:
		return d.save(st)
	}
	return d.w.SaveTurn(st)
}

// Finish saves the run as it ended, with its completion reason and what
// it reported of the turn it cut short (which is not committed), and lets
// it go: its lock, and the database it opened.
func (d *Run) Finish(st *state.State, reason string, stopped *state.Stopped) error {
	if d.db == nil {
		defer d.Abandon()
		d.sf.State, d.sf.CompletionReason, d.sf.Stopped = st, reason, stopped
		return d.lock.Save(d.sf)
	}
	err := d.w.Finish(st, reason, stopped)
	if cerr := d.w.Close(); err == nil {
		err = cerr
	}
	d.w = nil
	d.Abandon()
	return err
}

// Abandon lets go of a run that will not run, or not again.
func (d *Run) Abandon() {
	if d.lock != nil {
		d.lock.Unlock()
	}
	if d.w != nil {
		d.w.Close() // which holds a shared database's lock itself
		d.w = nil
	} else if d.locked {
		d.hold()
		d.db.Unlock(d.info)
		d.locked = false
		d.release()
	}
	if d.db != nil && d.ownDB {
		d.db.Close()
		d.ownDB = false
	}
}
