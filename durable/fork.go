package durable

import (
	"fmt"

	"github.com/ensemble-run/ensemble/state"
	"github.com/ensemble-run/ensemble/store"
)

// ErrForkJSON is a fork asked of a JSON state file, which keeps a run's
// last state only.
func errForkJSON(path string) error {
	return fmt.Errorf("%s is a JSON state file, which keeps only a run's last state: forks need a state database (run --state with a new file writes one)", path)
}

// Fork starts a new run in the state database at path whose first turn
// turns are those of run id (copied, not executed again; id "" is the
// database's one run), recording its parent (run and turn), and returns
// the new run's id. The new run has not finished: resume it by its id to
// go on (resume --run-id). The original run is untouched, and may be
// being written meanwhile: only its committed turns are copied (a turn
// after its last committed one is refused). Turn 0 is the run's start
// (its input).
func Fork(path, id string, turn int, sync store.Sync) (string, error) {
	if isDB, _ := store.IsDatabase(path); !isDB {
		if IsJSONFile(path) {
			return "", errForkJSON(path)
		}
		_, err := LoadFile(path) // why it is no state file
		return "", err
	}
	db, err := store.Open(path, false, sync)
	if err != nil {
		return "", err
	}
	defer db.Close()
	run, err := pickRun(db, id, false)
	if err != nil {
		return "", err
	}
	fork, err := db.Fork(run, turn, store.NewID())
	if err != nil {
		return "", err
	}
	return fork.ID, nil
}

// OpenFork is Open for a fork of run id at path from its turn `turn`:
// the Saved's File is the run's state as of that turn, with the run as its
// Parent, and nothing is written until Continue, which adds the fork to
// the database (locked for this process, as Open locks a run), so that a
// fork refused by its checks (Check) leaves no run behind. Info is the
// forked run's row until then, the fork's after.
func OpenFork(path, id string, turn int, sync store.Sync) (*Saved, error) {
	if isDB, _ := store.IsDatabase(path); !isDB {
		if IsJSONFile(path) {
			return nil, errForkJSON(path)
		}
		_, err := LoadFile(path)
		return nil, err
	}
	db, err := store.Open(path, false, sync)
	if err != nil {
		return nil, err
	}
	run, err := pickRun(db, id, false)
	if err != nil {
		db.Close()
		return nil, err
	}
	sf, err := db.LoadAt(run, turn)
	if err != nil {
		db.Close()
		return nil, err
	}
	return &Saved{Path: path, File: sf, Info: run, db: db, fork: true}, nil
}

// IsFork reports whether the run is a fork that Continue starts (OpenFork).
func (s *Saved) IsFork() bool { return s.fork }

// continueFork adds the fork to the database and locks it.
func (s *Saved) continueFork(rf *state.File) (*Run, error) {
	fork, err := s.db.Fork(s.Info, s.File.Parent.Turn, store.NewID())
	if err != nil {
		return nil, err
	}
	if err := s.db.Lock(fork); err != nil {
		return nil, err
	}
	s.Info = fork
	s.cont = &Run{path: s.Path, refs: rf, db: s.db, id: fork.ID, info: fork, behind: true, locked: true}
	return s.cont, nil
}
