package main

import (
	"github.com/spf13/pflag"

	"github.com/ensemble-run/ensemble/session"
)

// recordFlags are --record, --replay, --record-missing and --record-tools
// (docs/recording.md).
type recordFlags struct{ session.Recording }

func (r *recordFlags) register(fl *pflag.FlagSet) {
	fl.StringVar(&r.Record, "record", "", "record every model exchange and human answer into `DIR`, one YAML file per agent")
	fl.StringVar(&r.Replay, "replay", "", "serve model exchanges and human answers from the recording in `DIR`; a request it lacks fails")
	fl.BoolVar(&r.Missing, "record-missing", false, "with --replay, send the requests the recording lacks to the model and record them")
	fl.BoolVar(&r.Tools, "record-tools", false, "with --record or --record-missing, record tool results too (a replay then serves them)")
}

// notOnTemporal refuses a recording for a run on Temporal, whose workers
// neither record nor replay.
func (r *recordFlags) notOnTemporal() error {
	if r.Record != "" || r.Replay != "" {
		return usageErr("--record and --replay: a run on Temporal is neither recorded nor replayed; run it without --temporal")
	}
	return nil
}
