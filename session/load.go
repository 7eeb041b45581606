package session

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/ensemble-run/ensemble/ensemble"
	"github.com/ensemble-run/ensemble/kinds"
)

// LoadOptions are how an ensemble file is loaded for a session.
type LoadOptions struct {
	// Kinds are the kinds of agent the file may use; nil is kinds.Builtin().
	Kinds *kinds.Registry
	// Profiles are profiles files (--profiles), in order.
	Profiles []string
	// LookupEnv expands ${VAR} and finds $ENSEMBLE_PROFILES; nil is
	// os.LookupEnv.
	LookupEnv func(string) (string, bool)
}

// Load loads and validates the ensemble file at path (or data, named path,
// when data is not nil) as every front door does, with the model profiles
// of Profiles and of $ENSEMBLE_PROFILES: on a name clash the Profiles
// files win (the earlier first: what the command line gives wins over the
// file, with a warning), then the file's own models, then
// $ENSEMBLE_PROFILES.
// Problems of the file are an *ensemble.ErrorList; any other error names
// path.
func Load(path string, data []byte, o LoadOptions) (*ensemble.Ensemble, error) {
	lookup := o.LookupEnv
	if lookup == nil {
		lookup = os.LookupEnv
	}
	var files []string
	if env, ok := lookup("ENSEMBLE_PROFILES"); ok && env != "" {
		files = filepath.SplitList(env) // a list, as $PATH is
	}
	reg := o.Kinds
	if reg == nil {
		reg = kinds.Builtin()
	}
	opts := reg.Load(ensemble.LoadOptions{ProfileOverrides: o.Profiles, ProfileFiles: files, LookupEnv: lookup})
	var e *ensemble.Ensemble
	var err error
	if data == nil {
		e, err = ensemble.Load(path, opts)
	} else {
		e, err = ensemble.LoadBytes(path, data, opts)
	}
	if err != nil {
		var list *ensemble.ErrorList
		if errors.As(err, &list) {
			return nil, err
		}
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return e, nil
}
