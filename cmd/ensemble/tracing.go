package main

import (
	"fmt"

	"github.com/ensemble-run/ensemble/session"
)

// export is what --otel asks of a run's session: its spans exported to
// the collector the flag or the environment names, and a warning when
// they could not all be (session.Export).
func (s *sharedFlags) export(io *stdio) *session.Export { return otelExport(io, s.otel) }

// otelExport is the export --otel flag asks for (session.Export; the
// scenarios of test take it through bdd.RunOptions.Export).
func otelExport(io *stdio, flag string) *session.Export {
	return &session.Export{Endpoint: flag, Version: version(), Warn: func(endpoint string, err error) {
		warnUnexported(io, endpoint, err)
	}}
}

// warnUnexported warns that spans could not all be exported: the run's
// own outcome stands.
func warnUnexported(io *stdio, endpoint string, err error) {
	fmt.Fprintf(io.stderr(), "ensemble: warning: traces were not all exported to %s: %v\n", endpoint, err)
}
