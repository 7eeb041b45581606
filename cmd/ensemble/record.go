package main

import (
	"fmt"

	"github.com/spf13/pflag"

	"github.com/ensemble-run/ensemble/cassette"
)

// recordFlags are --record, --replay, --record-missing and --record-tools
// (docs/recording.md).
type recordFlags struct {
	record, replay string
	missing, tools bool
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
		return cassette.Open(cassette.Options{Dir: r.record, Mode: cassette.Record, Tools: r.tools})
	case r.replay != "":
		mode := cassette.Replay
		if r.missing {
			mode = cassette.RecordMissing
		}
		return cassette.Open(cassette.Options{Dir: r.replay, Mode: mode, Tools: r.tools})
	}
	return nil, nil
}
