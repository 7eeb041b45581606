package session

import (
	"fmt"
	"path/filepath"

	"github.com/ensemble-run/ensemble/agent"
	"github.com/ensemble-run/ensemble/internal/cassette"
	"github.com/ensemble-run/ensemble/internal/opaque"
	"github.com/ensemble-run/ensemble/state"
)

// Recording is where a run records or replays its model exchanges, tool
// results and answers (docs/recording.md): --record DIR, or --replay DIR
// (with Missing, --record-missing: what the recording lacks goes to the
// model and is recorded), and with Tools (--record-tools) the tool
// results too. The zero Recording is none.
type Recording struct {
	Record, Replay string
	Missing, Tools bool
	// Resumed: a resumed run's saved recording, which recording adds to
	// instead of starting afresh.
	Resumed bool
}

// Open opens the recording; the zero agent.Recording when there is none.
func (r Recording) Open() (agent.Recording, error) {
	c, err := r.open()
	if c == nil || err != nil {
		return agent.Recording{}, err
	}
	return opaque.Make[agent.Recording](c), nil
}

func (r Recording) open() (*cassette.Cassette, error) {
	switch {
	case r.Record != "" && r.Replay != "":
		return nil, fmt.Errorf("--record and --replay are mutually exclusive (--replay DIR --record-missing adds to a recording)")
	case r.Missing && r.Replay == "":
		return nil, fmt.Errorf("--record-missing needs --replay DIR")
	case r.Tools && r.Record == "" && !r.Missing:
		return nil, fmt.Errorf("--record-tools needs --record DIR or --record-missing")
	case r.Record != "":
		c, err := cassette.Open(cassette.Options{Dir: r.Record, Mode: cassette.Record, Tools: r.Tools, Continue: r.Resumed})
		if err != nil {
			return nil, fmt.Errorf("--record %w", err)
		}
		return c, nil
	case r.Replay != "":
		mode := cassette.Replay
		if r.Missing {
			mode = cassette.RecordMissing
		}
		c, err := cassette.Open(cassette.Options{Dir: r.Replay, Mode: mode, Tools: r.Tools})
		if err != nil {
			return nil, fmt.Errorf("--replay %w", err)
		}
		return c, nil
	}
	return nil, nil
}

// Saved is the recording as a durable run keeps it (nil: none), so that a
// resume records or replays as the run did.
func (r Recording) Saved() (*state.Recording, error) {
	dir, mode := r.Record, "record"
	switch {
	case r.Replay != "" && r.Missing:
		dir, mode = r.Replay, "record-missing"
	case r.Replay != "":
		dir, mode = r.Replay, "replay"
	case dir == "":
		return nil, nil
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		flag := "--replay"
		if mode == "record" {
			flag = "--record"
		}
		return nil, fmt.Errorf("%s: %w", flag, err)
	}
	return &state.Recording{Dir: abs, Mode: mode, Tools: r.Tools}, nil
}

// SavedRecording is the recording a durable run was started with.
func SavedRecording(s *state.Recording) Recording {
	if s == nil {
		return Recording{}
	}
	r := Recording{Tools: s.Tools, Resumed: true}
	switch s.Mode {
	case "record":
		r.Record = s.Dir
	case "record-missing":
		r.Replay, r.Missing = s.Dir, true
	default:
		r.Replay = s.Dir
	}
	return r
}
