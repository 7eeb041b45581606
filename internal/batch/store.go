package batch

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"github.com/ensemble-run/ensemble/durable"
	"github.com/ensemble-run/ensemble/ensemble"
	"github.com/ensemble-run/ensemble/internal/report"
	"github.com/ensemble-run/ensemble/state"
	"github.com/ensemble-run/ensemble/store"
)

// A batch with --state (docs/cli.md#ensemble-batch): the batch is a row of
// the state database (its spec, and each finished input's line), and each
// input's run a run of it, saved after every turn, with the id BATCH.N (N:
// the input's position, from 1).

// Spec is what a batch saved with --state is: enough for a resume to go on
// as it started.
type Spec struct {
	Ensemble    state.FileRef  `json:"ensemble"`
	Inputs      state.FileRef  `json:"inputs"`
	Output      string         `json:"output"` // absolute, or "-"
	Responses   *state.FileRef `json:"responses,omitempty"`
	Profiles    []string       `json:"profiles,omitempty"`
	Options     state.Options  `json:"options"`
	Concurrency int            `json:"concurrency"`
	Live        []string       `json:"live,omitempty"`
	LiveAll     bool           `json:"live_all,omitempty"`
}

// NewSpec is the spec of a new batch of e over the inputs file at inputs
// (whose SHA-256 in hex, as ReadInputs returns it, is sum), written to out
// ("-": standard output), with refs and opts.
func NewSpec(e *ensemble.Ensemble, inputs, sum string, out string, refs durable.Refs, opts state.Options) (*Spec, error) {
	abs, err := filepath.Abs(inputs)
	if err != nil {
		return nil, fmt.Errorf("--inputs: %w", err)
	}
	spec := &Spec{
		Ensemble: state.FileRef{Name: e.Name, Path: e.Path, SHA256: e.Hash},
		Inputs:   state.FileRef{Path: abs, SHA256: sum},
		Output:   out,
		Options:  opts,
	}
	if out != "-" {
		if spec.Output, err = filepath.Abs(out); err != nil {
			return nil, fmt.Errorf("--out: %w", err)
		}
	}
	for _, p := range refs.Profiles {
		a, err := filepath.Abs(p)
		if err != nil {
			return nil, fmt.Errorf("--profiles: %w", err)
		}
		spec.Profiles = append(spec.Profiles, a)
	}
	if refs.Responses != "" {
		a, err := filepath.Abs(refs.Responses)
		if err != nil {
			return nil, fmt.Errorf("--responses: %w", err)
		}
		h, err := state.HashFile(a)
		if err != nil {
			return nil, fmt.Errorf("--responses: %w", err)
		}
		spec.Responses = &state.FileRef{Path: a, SHA256: h}
	}
	return spec, nil
}

// Refs are the files the batch's runs were started with.
func (s *Spec) Refs() durable.Refs {
	r := durable.Refs{Profiles: s.Profiles}
	if s.Responses != nil {
		r.Responses = s.Responses.Path
	}
	return r
}

// Changes names the files of the batch that changed since it started: its
// ensemble (e as it loads now), its inputs (inputsSum: their SHA-256 now), its
// responses file.
func (s *Spec) Changes(e *ensemble.Ensemble, inputsSum string) ([]string, error) {
	var changes []string
	if e.Hash != s.Ensemble.SHA256 {
		changes = append(changes, "the ensemble file "+s.Ensemble.Path)
	}
	if inputsSum != s.Inputs.SHA256 {
		changes = append(changes, "the inputs file "+s.Inputs.Path)
	}
	if r := s.Responses; r != nil {
		sum, err := state.HashFile(r.Path)
		if err != nil {
			return nil, fmt.Errorf("its responses file: %w", err)
		}
		if sum != r.SHA256 {
			changes = append(changes, "the responses file "+r.Path)
		}
	}
	return changes, nil
}

// Store is a batch saved in a state database: its row, and its runs.
type Store struct {
	// The database has one connection: every use holds its lock
	// (store.DB.Hold), which guards runs too.
	db   *store.DB
	info *store.BatchInfo
	runs map[string]*store.RunInfo // the runs of the batch it holds already (a resumed batch's)
	refs durable.Refs
	// resolve reads refs once, for every run (durable.Refs.Resolve).
	resolve func() (durable.Resolved, error)
}

// resolved are the store's refs, read once.
func (st *Store) resolved() (durable.Resolved, error) {
	if st.resolve == nil {
		return st.refs.Resolve()
	}
	return st.resolve()
}

// newStore is the store of a batch in db.
//
// The runs of a batch commit their writes together (store.DB.GroupCommit):
// a turn of injected responses is written without a commit of its own,
// and the outcomes' lines are committed (Commit) before they are written.
func newStore(db *store.DB, info *store.BatchInfo, refs durable.Refs) *Store {
	st := &Store{db: db, info: info, runs: map[string]*store.RunInfo{}, refs: refs, resolve: sync.OnceValues(refs.Resolve)}
	db.GroupCommit(false)
	return st
}

// ErrNotDatabase is the error of a batch saved in a file that is not a
// state database.
var ErrNotDatabase = errors.New("is not a state database")

// ExistsError is a new batch whose id the database holds already.
type ExistsError struct{ Path, ID string }

func (e *ExistsError) Error() string { return fmt.Sprintf("%s holds a batch %s already", e.Path, e.ID) }

// Create adds a new batch with spec to the state database at path (a new
// file, an empty one, or a database), as id (a new id when "").
func Create(path, id string, spec *Spec, sync store.Sync) (*Store, error) {
	if !durable.SavesInDatabase(path) {
		return nil, fmt.Errorf("%s %w: name a new file, or a database that run --state or batch --state wrote", path, ErrNotDatabase)
	}
	db, err := store.Open(path, true, sync)
	if err != nil {
		return nil, err
	}
	if id == "" {
		id = store.NewID()
	}
	data, err := json.Marshal(spec)
	var info *store.BatchInfo
	if err == nil {
		info, err = db.CreateBatch(id, data)
	}
	if err != nil {
		db.Close()
		if errors.Is(err, store.ErrBatchExists) {
			return nil, &ExistsError{Path: path, ID: id}
		}
		return nil, err
	}
	return newStore(db, info, spec.Refs()), nil
}

// Saved is a batch found in a state database, to be finished: locked for
// this process.
type Saved struct {
	*Store
	Spec *Spec
}

// Open finds the batch id names in the state database at path, or its one
// unfinished batch, and locks it.
func Open(path, id string, sync store.Sync) (*Saved, error) {
	db, err := store.Open(path, false, sync)
	if err != nil {
		return nil, err
	}
	b, err := pickBatch(db, id)
	if err == nil {
		err = db.LockBatch(b)
	}
	if err != nil {
		db.Close()
		return nil, err
	}
	var spec Spec
	if err := json.Unmarshal(b.Spec, &spec); err != nil {
		db.Close()
		return nil, fmt.Errorf("%s: batch %s: corrupt: %v", path, b.ID, err)
	}
	st := newStore(db, b, spec.Refs())
	runs, err := db.Runs()
	if err != nil {
		db.Close()
		return nil, err
	}
	for _, r := range runs {
		if strings.HasPrefix(r.ID, b.ID+".") {
			st.runs[r.ID] = r
		}
	}
	return &Saved{Store: st, Spec: &spec}, nil
}

// Lines are the outcomes the batch saved, by input position, for those
// of the n inputs.
func (s *Saved) Lines(n int) (map[int]*Outcome, error) {
	saved, err := s.db.BatchLines(s.info)
	if err != nil {
		return nil, err
	}
	done := make(map[int]*Outcome, len(saved))
	for idx, sl := range saved {
		if idx >= n {
			continue
		}
		o := &Outcome{Index: idx, Line: sl.Line}
		if err := json.Unmarshal(sl.Meta, &o.Meta); err != nil {
			return nil, fmt.Errorf("%s: batch %s: corrupt line %d: %v", s.db.Path(), s.info.ID, idx+1, err)
		}
		done[idx] = o
	}
	return done, nil
}

// ID is the batch's id.
func (st *Store) ID() string { return st.info.ID }

// SaveLine keeps the line of an input whose run ended, before it is
// written to the output (Batch.Save).
func (st *Store) SaveLine(o *Outcome) error {
	meta, err := json.Marshal(o.Meta)
	if err != nil {
		return err
	}
	st.db.Hold()
	defer st.db.Release()
	return st.db.SaveBatchLine(st.info, o.Index, o.Line, meta)
}

// Commit makes the lines SaveLine kept durable, with what the runs wrote
// since the last commit (Batch.Commit).
func (st *Store) Commit() error {
	st.db.Hold()
	defer st.db.Release()
	return st.db.Flush()
}

// Finish marks the batch done: every input has its line.
func (st *Store) Finish() error {
	st.db.Hold()
	defer st.db.Release()
	if err := st.db.Flush(); err != nil {
		return err
	}
	return st.db.FinishBatch(st.info, "done")
}

// Close commits what the runs wrote and closes the database.
func (st *Store) Close() error {
	st.db.Hold()
	defer st.db.Release()
	return st.db.Close()
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
		return nil, fmt.Errorf("state file %s holds no batch %q%s", db.Path(), id, batchList(batches))
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
		return nil, fmt.Errorf("state file %s holds no batch (batch --state FILE saves one)", db.Path())
	case len(unfinished) == 0:
		return nil, fmt.Errorf("state file %s holds no unfinished batch; name one with --batch-id to write its output again%s", db.Path(), batchList(batches))
	}
	return nil, fmt.Errorf("state file %s holds %d unfinished batches; name one with --batch-id%s", db.Path(), len(unfinished), batchList(unfinished))
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
		var spec Spec
		_ = json.Unmarshal(x.Spec, &spec)
		fmt.Fprintf(&b, "\n  %s  (%s, %s saved, %s)", x.ID, spec.Ensemble.Name, report.Count(x.Lines, "line"), status)
	}
	return b.String()
}

// KeepWritten keeps the lines of the output file at path that are the
// batch's saved lines (done), in order, and cuts the file after them (a
// line cut short by a killed process, or written by something else); it
// returns how many it kept. A missing file is made anew.
//
// The file is compared a line at a time, never read whole: it may be far
// larger than memory.
func KeepWritten(path string, inputs []*Input, done map[int]*Outcome) (int, error) {
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	defer f.Close()
	r := bufio.NewReader(f)
	var buf []byte
	n, off := 0, int64(0)
	for n < len(inputs) {
		o := done[n]
		if o == nil {
			break
		}
		buf = slices.Grow(buf[:0], len(o.Line))[:len(o.Line)]
		if _, err := io.ReadFull(r, buf); err != nil || !bytes.Equal(buf, o.Line) {
			break
		}
		off += int64(len(o.Line))
		n++
	}
	fi, err := f.Stat()
	if err != nil {
		return 0, err
	}
	if off < fi.Size() {
		if err := os.Truncate(path, off); err != nil {
			return 0, err
		}
	}
	return n, nil
}

// File is a file a batch reads, named for a message.
type File struct{ What, Path string }

// CheckOutput refuses an output file that is one the batch reads (the
// inputs, the ensemble, the state database…), by any path to it: opening
// it would overwrite it before anything ran.
func CheckOutput(out string, files []File) error {
	if f, ok := SameFile(out, files); ok {
		return fmt.Errorf("--out %s is %s: the results would overwrite it; give them a file of their own", out, f.What)
	}
	return nil
}

// SameFile is the file of files that out is, by any path to it; out "-"
// (standard output) is none.
func SameFile(out string, files []File) (File, bool) {
	if out == "-" {
		return File{}, false
	}
	outAbs, _ := filepath.Abs(out)
	ost, oerr := os.Stat(out)
	for _, f := range files {
		if f.Path == "" || f.Path == "-" {
			continue
		}
		if abs, err := filepath.Abs(f.Path); err == nil && abs == outAbs {
			return f, true
		}
		if st, err := os.Stat(f.Path); err == nil && oerr == nil && os.SameFile(st, ost) {
			return f, true
		}
	}
	return File{}, false
}
