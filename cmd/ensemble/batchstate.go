package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"

	"github.com/ensemble-run/ensemble/engine"
	"github.com/ensemble-run/ensemble/report"
	"github.com/ensemble-run/ensemble/runners"
	"github.com/ensemble-run/ensemble/state"
	"github.com/ensemble-run/ensemble/store"
)

// A batch with --state (docs/cli.md#ensemble-batch): the batch is a row of
// the state database (its spec, and each finished input's line), and each
// input's run a run of it, saved after every turn, with the id
// BATCH.N (N: the input's position, from 1).

// create adds a new batch with spec to the state database at path.
func (l *localBatch) create(io *stdio, path, id string, spec *batchSpec) error {
	if !isNewDatabase(path) {
		return usageErr("--state %s is not a state database: name a new file, or a database that run --state or batch --state wrote", path)
	}
	sync, err := storeSync(io)
	if err != nil {
		return err
	}
	db, err := store.Open(path, true, sync)
	if err != nil {
		return usageErr("--state: %v", err)
	}
	if id == "" {
		id = store.NewID()
	}
	data, err := json.Marshal(spec)
	if err == nil {
		l.batch, err = db.CreateBatch(id, data)
	}
	if err != nil {
		db.Close()
		if errors.Is(err, store.ErrBatchExists) {
			return usageErr("--state %s holds a batch %s already; finish it with\n  %s batch --resume %s --batch-id %s\nor start a new one with another --batch-id",
				path, id, io.program(), shellQuote(path), shellQuote(id))
		}
		return usageErr("--state: %v", err)
	}
	l.db, l.runs = db, map[string]*store.RunInfo{}
	return nil
}

// file is the state file of run r, as the database keeps it.
func (l *localBatch) file(r *engine.Run) *state.File {
	sf := r.File("")
	withRefs(sf, l.extra)
	return sf
}

// runDurable runs input in as run BATCH.N of the database: a new run, or
// the one a resumed batch finds unfinished, continued from its last
// completed turn.
func (l *localBatch) runDurable(ctx context.Context, in *batchInput, opts engine.Options) (*engine.Result, error) {
	id := l.runID(in)
	var w *store.Writer
	opts.AfterTurn = func(st *state.State) error {
		l.mu.Lock()
		defer l.mu.Unlock()
		return w.SaveTurn(st)
	}
	var r *engine.Run
	l.mu.Lock()
	info := l.runs[id]
	var err error
	switch {
	case info == nil:
		r = engine.New(l.e, in.input, opts)
		w, err = l.db.Create(id, l.file(r), stateKeys(l.e))
	case info.CompletionReason == "" || info.CompletionReason == engine.Cancelled:
		r, w, err = l.continueRun(info, opts)
	default:
		// It ended, but the process was stopped before its line was saved.
		var sf *state.File
		sf, err = l.db.Load(info)
		l.mu.Unlock()
		if err != nil {
			return nil, err
		}
		return savedResult(sf, info), nil
	}
	l.mu.Unlock()
	if err != nil {
		return nil, err
	}
	res := r.Run(ctx)
	l.mu.Lock()
	err = w.Finish(r.State(), res.CompletionReason)
	w.Close()
	l.mu.Unlock()
	if err != nil {
		return nil, err
	}
	return res, nil
}

// continueRun prepares the run info of a resumed batch, which stopped
// before it ended, to go on from its last completed turn. l.mu is held.
func (l *localBatch) continueRun(info *store.RunInfo, opts engine.Options) (*engine.Run, *store.Writer, error) {
	if err := l.db.Lock(info); err != nil {
		return nil, nil, err
	}
	sf, err := l.db.Load(info)
	if err == nil {
		err = engine.CheckState(l.e, sf)
	}
	if err != nil {
		l.db.Unlock(info)
		return nil, nil, err
	}
	if inj, ok := opts.Runner.(*runners.InjectedRunner); ok {
		inj.Resume(sf.State.History) // responses by path go on where they were
	}
	r := engine.FromFile(l.e, sf, opts)
	w, err := l.db.Continue(info, l.file(r), stateKeys(l.e))
	if err != nil {
		l.db.Unlock(info)
		return nil, nil, err
	}
	return r, w, nil
}

// saveLine keeps the line of an input whose run ended, before it is
// written to the output.
func (l *localBatch) saveLine(o *batchOutcome) error {
	meta, err := json.Marshal(o.meta)
	if err != nil {
		return err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.db.SaveBatchLine(l.batch, o.idx, o.line, meta)
}

// resumeBatch is `ensemble batch --resume DB`: it finishes the runs of the
// batch that have not ended, runs those that never started, and completes
// the output, which ends as it would have had the batch never stopped.
func resumeBatch(ctx context.Context, io *stdio, f *batchFlags, changed func(string) bool) error {
	path := f.resume
	sync, err := storeSync(io)
	if err != nil {
		return err
	}
	db, err := store.Open(path, false, sync)
	if err != nil {
		return &exitError{code: engine.ExitUsage, err: err}
	}
	defer db.Close()
	b, err := pickBatch(db, f.batchID)
	if err == nil {
		err = db.LockBatch(b)
	}
	if err != nil {
		var ee *exitError
		if errors.As(err, &ee) {
			return err
		}
		return &exitError{code: engine.ExitUsage, err: err}
	}
	var spec batchSpec
	if err := json.Unmarshal(b.Spec, &spec); err != nil {
		return usageErr("%s: batch %s: corrupt: %v", path, b.ID, err)
	}
	e, err := loadEnsemble(io, spec.Ensemble.Path, spec.Profiles)
	if err != nil {
		return &exitError{code: engine.ExitUsage, err: fmt.Errorf("cannot resume batch %s: its ensemble file does not load:\n%w", b.ID, err)}
	}
	data, err := os.ReadFile(spec.Inputs.Path)
	if err != nil {
		return usageErr("cannot resume batch %s: its inputs: %v", b.ID, err)
	}
	var changes []string
	if e.Hash != spec.Ensemble.SHA256 {
		changes = append(changes, "the ensemble file "+spec.Ensemble.Path)
	}
	if sum := sha256.Sum256(data); hex.EncodeToString(sum[:]) != spec.Inputs.SHA256 {
		changes = append(changes, "the inputs file "+spec.Inputs.Path)
	}
	if r := spec.Responses; r != nil {
		if sum, err := state.HashFile(r.Path); err != nil {
			return usageErr("cannot resume batch %s: its responses file: %v", b.ID, err)
		} else if sum != r.SHA256 {
			changes = append(changes, "the responses file "+r.Path)
		}
	}
	if len(changes) > 0 {
		msg := strings.Join(changes, ", ") + " changed since the batch started"
		if !f.force {
			return usageErr("%s; resuming would finish it with a different workflow or inputs; use --force to resume anyway", msg)
		}
		fmt.Fprintf(io.stderr(), "ensemble: warning: %s; resuming anyway (--force)\n", msg)
	}
	inputs, err := parseInputs(spec.Inputs.Path, data)
	if err != nil {
		return &exitError{code: engine.ExitUsage, err: err}
	}
	s := sharedFlags{profiles: spec.Profiles, maxTurns: spec.Options.MaxTurns, timeout: spec.Options.Timeout(),
		parallel: spec.Options.Parallel, maxTokens: spec.Options.MaxTokens, maxRequests: spec.Options.MaxRequests,
		maxCost: spec.Options.MaxCost, liveFlags: liveFlags{live: spec.Live, liveAll: spec.LiveAll}, quiet: f.quiet}
	if spec.Responses != nil {
		s.responses = spec.Responses.Path
	}
	lb, err := newLocalBatch(io, e, &s)
	if err != nil {
		return err
	}
	lb.db, lb.batch, lb.runs = db, b, map[string]*store.RunInfo{}
	runs, err := db.Runs()
	if err != nil {
		return &exitError{code: engine.ExitUsage, err: err}
	}
	for _, r := range runs {
		if strings.HasPrefix(r.ID, b.ID+".") {
			lb.runs[r.ID] = r
		}
	}
	saved, err := db.BatchLines(b)
	if err != nil {
		return &exitError{code: engine.ExitUsage, err: err}
	}
	done := make(map[int]*batchOutcome, len(saved))
	for idx, sl := range saved {
		if idx >= len(inputs) {
			continue
		}
		o := &batchOutcome{idx: idx, line: sl.Line}
		if err := json.Unmarshal(sl.Meta, &o.meta); err != nil {
			return usageErr("%s: batch %s: corrupt line %d: %v", path, b.ID, idx+1, err)
		}
		done[idx] = o
	}
	concurrency, out := spec.Concurrency, spec.Output
	if changed("concurrency") || concurrency < 1 {
		concurrency = f.concurrency
	}
	if changed("out") {
		out = f.out
	}
	read := []batchFile{{"the batch's ensemble file", spec.Ensemble.Path}, {"the batch's inputs file", spec.Inputs.Path},
		{"the state database", path}}
	if spec.Responses != nil {
		read = append(read, batchFile{"the batch's responses file", spec.Responses.Path})
	}
	for _, p := range spec.Profiles {
		read = append(read, batchFile{"a profiles file of the batch", p})
	}
	if err := checkOutput(out, read); err != nil {
		return err
	}
	written := 0
	if out != "-" {
		if written, err = keepWritten(out, inputs, done); err != nil {
			return usageErr("--out %s: %v", out, err)
		}
	}
	w, closeOut, err := openOutput(io, out, true)
	if err != nil {
		return err
	}
	if !f.quiet {
		fmt.Fprintf(io.stderr(), "ensemble: resuming batch %s of %s: %d of %s done\n", b.ID, spec.Ensemble.Path, len(done), report.Count(len(inputs), "input"))
	}
	br := &batchRun{inputs: inputs, runOne: lb.runOne, concurrency: concurrency, done: done, written: written, out: w, save: lb.saveLine}
	resume := io.program() + " batch --resume " + shellQuote(path)
	if f.batchID != "" {
		resume += " --batch-id " + shellQuote(f.batchID)
	}
	return finishBatch(ctx, io, br, lb, closeOut, resume, f.quiet)
}

// keepWritten keeps the lines of the output file at path that are the
// batch's saved lines, in order, and cuts the file after them (a line cut
// short by a killed process, or written by something else); it returns how
// many it kept. A missing file is made anew.
func keepWritten(path string, inputs []*batchInput, done map[int]*batchOutcome) (int, error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	n, off := 0, 0
	for n < len(inputs) {
		o := done[n]
		if o == nil || !bytes.HasPrefix(data[off:], o.line) {
			break
		}
		off += len(o.line)
		n++
	}
	if off < len(data) {
		if err := os.Truncate(path, int64(off)); err != nil {
			return 0, err
		}
	}
	return n, nil
}

// pickBatch finds the batch id names, or the database's one unfinished
// batch.
func pickBatch(db *store.DB, id string) (*store.BatchInfo, error) {
	batches, err := db.Batches()
	if err != nil {
		return nil, err
	}
	if id != "" {
		for _, b := range batches {
			if b.ID == id {
				return b, nil
			}
		}
		return nil, usageErr("state file %s holds no batch %q%s", db.Path(), id, batchList(batches))
	}
	var unfinished []*store.BatchInfo
	for _, b := range batches {
		if b.Status == "" {
			unfinished = append(unfinished, b)
		}
	}
	switch {
	case len(unfinished) == 1:
		return unfinished[0], nil
	case len(batches) == 0:
		return nil, usageErr("state file %s holds no batch (batch --state FILE saves one)", db.Path())
	case len(unfinished) == 0:
		return nil, usageErr("state file %s holds no unfinished batch; name one with --batch-id to write its output again%s", db.Path(), batchList(batches))
	}
	return nil, usageErr("state file %s holds %d unfinished batches; name one with --batch-id%s", db.Path(), len(unfinished), batchList(unfinished))
}

// batchList is a line per batch: id, lines saved, status.
func batchList(batches []*store.BatchInfo) string {
	if len(batches) == 0 {
		return ""
	}
	var b strings.Builder
	b.WriteString(":")
	for _, x := range batches {
		status := "unfinished"
		if x.Status != "" {
			status = x.Status
		}
		var spec batchSpec
		_ = json.Unmarshal(x.Spec, &spec)
		fmt.Fprintf(&b, "\n  %s  (%s, %s saved, %s)", x.ID, spec.Ensemble.Name, report.Count(x.Lines, "line"), status)
	}
	return b.String()
}
