package batch

import (
	"errors"
	"fmt"
	"strings"

	"github.com/ensemble-run/ensemble/ensemble"
)

// ChangedError is a saved batch whose files changed since it started:
// finishing it would run a different workflow, or other inputs.
type ChangedError struct{ Changes []string }

func (e *ChangedError) Error() string {
	return strings.Join(e.Changes, ", ") + " changed since the batch started"
}

// Resumption is where a saved batch goes on from (Saved.Prepare).
type Resumption struct {
	Inputs []*Input
	// Done are the lines the batch saved, by input position.
	Done map[int]*Outcome
	// Out is the output path, and Written how many of its lines are kept.
	Out     string
	Written int
	// Changes are the files that changed since the batch started, when
	// Prepare was told to go on anyway.
	Changes []string
}

// Prepare checks that the saved batch can go on with e (its ensemble as it
// loads now), writing to out ("" is the output it was started with), and
// prepares it: its inputs read again, the files that changed since it
// started (a *ChangedError, unless force), the lines it saved, and the
// output's lines that are those lines kept, the rest cut. statePath is the
// database's path, which the output must not be.
func (s *Saved) Prepare(e *ensemble.Ensemble, statePath, out string, force bool) (*Resumption, error) {
	inputs, sum, err := s.Inputs()
	var re *ReadError
	switch {
	case errors.As(err, &re):
		return nil, fmt.Errorf("cannot resume batch %s: its inputs: %w", s.ID(), err)
	case err != nil:
		return nil, err
	}
	changes, err := s.Spec.Changes(e, sum)
	if err != nil {
		return nil, fmt.Errorf("cannot resume batch %s: %w", s.ID(), err)
	}
	if len(changes) > 0 && !force {
		return nil, &ChangedError{Changes: changes}
	}
	done, err := s.Lines(len(inputs))
	if err != nil {
		return nil, err
	}
	if out == "" {
		out = s.Spec.Output
	}
	if err := CheckOutput(out, s.Reads(statePath)); err != nil {
		return nil, err
	}
	r := &Resumption{Inputs: inputs, Done: done, Out: out, Changes: changes}
	if out != "-" {
		if r.Written, err = KeepWritten(out, inputs, done); err != nil {
			return nil, fmt.Errorf("--out %s: %w", out, err)
		}
	}
	return r, nil
}
