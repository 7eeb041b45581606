package main

import (
	"fmt"
	"path/filepath"

	"github.com/spf13/pflag"

	"github.com/ensemble-run/ensemble/cassette"
	"github.com/ensemble-run/ensemble/state"
)

// recordFlags are --record, --replay, --record-missing and --record-tools
// (docs/recording.md).
type recordFlags struct {
	record, replay string
	missing, tools bool
	// resumed: the flags are a resumed run's saved recording, which a
	// recording run adds to instead of starting afresh.
	resumed bool
}

func (r *recordFlags) register(fl *pflag.FlagSet) {
	fl.StringVar(&r.record, "record", "", "record every model exchange and human answer into `DIR`, one YAML file per agent")
	fl.StringVar(&r.replay, "replay", "", "serve model exchanges and human answers from the recording in `DIR`; a request it lacks fails")
	fl.BoolVar(&r.missing, "record-missing", false, "with --replay, send the requests the recording lacks to the model and record them")
	fl.BoolVar(&r.tools, "record-tools", false, "with --record or --record-missing, record tool results too (a replay then serves them)")
}

// open opens the recording the flags name; nil when none.
func (r *recordFlags) open() (*cassette.Cassette, error) {
	switch {
	case r.record != "" && r.replay != "":
		return nil, fmt.Errorf("--record and --replay are mutually exclusive (--replay DIR --record-missing adds to a recording)")
	case r.missing && r.replay == "":
		return nil, fmt.Errorf("--record-missing needs --replay DIR")
	case r.tools && r.record == "" && !r.missing:
		return nil, fmt.Errorf("--record-tools needs --record DIR or --record-missing")
	case r.record != "":
		c, err := cassette.Open(cassette.Options{Dir: r.record, Mode: cassette.Record, Tools: r.tools, Continue: r.resumed})
		if err != nil {
			return nil, fmt.Errorf("--record %w", err)
		}
		return c, nil
	case r.replay != "":
		mode := cassette.Replay
		if r.missing {
			mode = cassette.RecordMissing
		}
		c, err := cassette.Open(cassette.Options{Dir: r.replay, Mode: mode, Tools: r.tools})
		if err != nil {
			return nil, fmt.Errorf("--replay %w", err)
		}
		return c, nil
	}
	return nil, nil
}

// saved is the recording as a durable run keeps it (nil: none), so that
// ensemble resume records or replays as the run did.
func (r *recordFlags) saved() (*state.Recording, error) {
	dir, mode := r.record, "record"
	switch {
	case r.replay != "" && r.missing:
		dir, mode = r.replay, "record-missing"
	case r.replay != "":
		dir, mode = r.replay, "replay"
	case dir == "":
		return nil, nil
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("--%s: %w", map[bool]string{true: "record", false: "replay"}[mode == "record"], err)
	}
	return &state.Recording{Dir: abs, Mode: mode, Tools: r.tools}, nil
}

// resumeFrom sets the flags of a resumed run from the recording it was
// started with.
func (r *recordFlags) resumeFrom(s *state.Recording) {
	if s == nil {
		return
	}
	*r = recordFlags{tools: s.Tools, resumed: true}
	switch s.Mode {
	case "record":
		r.record = s.Dir
	case "record-missing":
		r.replay, r.missing = s.Dir, true
	default:
		r.replay = s.Dir
	}
}

// notOnTemporal refuses a recording for a run on Temporal, whose workers
// neither record nor replay.
func (r *recordFlags) notOnTemporal() error {
	if r.record != "" || r.replay != "" {
		return usageErr("--record and --replay: a run on Temporal is neither recorded nor replayed; run it without --temporal")
	}
	return nil
}
