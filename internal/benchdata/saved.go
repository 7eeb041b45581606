package benchdata

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/ensemble-run/ensemble/durable"
	"github.com/ensemble-run/ensemble/internal/responses"
	"github.com/ensemble-run/ensemble/kinds/ask"
	"github.com/ensemble-run/ensemble/session"
	"github.com/ensemble-run/ensemble/store"
)

// Saved is a run saved in a state database.
type Saved struct {
	DB, ID string
	// Reason is how the run ended ("completed", "awaiting_input", ...);
	// Turns how many turns it took.
	Reason string
	Turns  int
}

// SaveRun runs the ensemble file at path as `run PATH --state DB
// [--responses RESPONSES]` does: through the engine, with the injected
// responses of the file at respFile ("": none), its ask agents waiting for
// an answer, each turn saved in the state database at db (created when
// missing) by its writer. The environment is the process's.
func SaveRun(ctx context.Context, db, path, respFile string) (Saved, error) {
	e, err := session.Load(path, nil, session.LoadOptions{})
	if err != nil {
		return Saved{}, err
	}
	opts := session.Options{Ask: ask.Options{Suspend: true, NoInput: true}}
	if respFile != "" {
		if opts.Models.Responses, err = responses.LoadResponsesFor(respFile, e); err != nil {
			return Saved{}, err
		}
		opts.Models.ResponsesFile = respFile
	}
	s, err := session.Open(ctx, e, opts)
	if err != nil {
		return Saved{}, err
	}
	defer s.Close()
	d, err := durable.Create(db, "", durable.Refs{Responses: respFile}, store.SyncNormal)
	if err != nil {
		return Saved{}, err
	}
	defer d.Abandon() // if it never ran
	r, err := s.Start(e.Input, session.RunOptions{Save: d, RunID: d.ID()})
	if err != nil {
		return Saved{}, err
	}
	res, err := r.Run(ctx)
	if err != nil {
		return Saved{}, fmt.Errorf("saving %s in %s: %w", path, db, err)
	}
	return Saved{DB: db, ID: d.ID(), Reason: string(res.CompletionReason), Turns: res.TurnCount}, nil
}

// LongRunTurns is the number of executions of each agent of the long run
// the inspector's benchmark opens: the "2×16,000 turns" of the performance
// table.
const LongRunTurns = 16000

// SaveLoop writes Loop(turns, pad) and its responses into dir and saves a
// run of it in dir/runs.db (SaveRun): 2×turns+1 turns of two agents, ping
// and pong, taking turns, each execution a row written by the store's
// writer, as `run --state` writes them. With turns = LongRunTurns it is the
// saved 2×16,000-turn run of docs/performance.md.
func SaveLoop(ctx context.Context, dir string, turns, pad int) (Saved, error) {
	ens, resp := filepath.Join(dir, "ensemble.yaml"), filepath.Join(dir, "responses.yaml")
	if err := writeFiles(ens, resp, func(e, r *bufio.Writer) { Loop(e, r, turns, pad) }); err != nil {
		return Saved{}, err
	}
	return SaveRun(ctx, filepath.Join(dir, "runs.db"), ens, resp)
}

func writeFiles(ens, resp string, fill func(e, r *bufio.Writer)) error {
	var ws [2]*bufio.Writer
	var fs [2]*os.File
	for i, p := range []string{ens, resp} {
		f, err := os.Create(p)
		if err != nil {
			return err
		}
		defer f.Close()
		fs[i], ws[i] = f, bufio.NewWriter(f)
	}
	fill(ws[0], ws[1])
	for i := range ws {
		if err := ws[i].Flush(); err != nil {
			return err
		}
		if err := fs[i].Close(); err != nil {
			return err
		}
	}
	return nil
}
