package durable

import (
	"fmt"

	"github.com/ensemble-run/ensemble/store"
)

// At names a saved run to go on (Resume): the state path, the run's id in
// a state database ("": its one unfinished run), whether a fork of it
// goes on from turn FromTurn instead (OpenFork), and how the database
// syncs.
type At struct {
	Path     string
	ID       string
	Fork     bool
	FromTurn int
	Sync     store.Sync
}

// JSONFileError is a run id or a fork asked of a JSON state file, which
// holds one run, and only its last state.
type JSONFileError struct {
	Path string
	Fork bool // a fork was asked, else a run id
}

func (e *JSONFileError) Error() string {
	if e.Fork {
		return errForkJSON(e.Path).Error()
	}
	return fmt.Sprintf("%s is a JSON state file, which holds one run: resume it without a run id", e.Path)
}

// Resume is what a front door that resumes does before the run's session
// opens, in one call: it refuses a fork or a run id asked of a JSON state
// file (a *JSONFileError), finds and locks the run at names (Open, or
// OpenFork), and prepares it to go on as o says (Prepare), letting the run
// go when Prepare refuses it. Start goes on with it; the caller closes
// the run (Resumption.Saved.Close) once it has run.
func Resume(at At, o ResumeOptions) (*Resumption, error) {
	if (at.Fork || at.ID != "") && IsJSONFile(at.Path) {
		return nil, &JSONFileError{Path: at.Path, Fork: at.Fork}
	}
	open := Open
	if at.Fork {
		open = func(path, id string, sync store.Sync) (*Saved, error) {
			return OpenFork(path, id, at.FromTurn, sync)
		}
	}
	saved, err := open(at.Path, at.ID, at.Sync)
	if err != nil {
		return nil, err
	}
	p, err := Prepare(saved, o)
	if err != nil {
		saved.Close()
		return nil, err
	}
	return p, nil
}
