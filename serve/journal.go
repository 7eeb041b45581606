package serve

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"sync"

	"github.com/ensemble-run/ensemble/internal/readcap"
)

// The journal is what the server keeps of its runs beside the state
// database, in the folder STATE.serve/ next to it: what the database does
// not hold. events.log holds the events of every run, a line each,
// "RUN<TAB>SEQ<TAB>JSON", appended as they happen and kept across
// restarts, so that an event stream resumes from any sequence number; for
// a run with a webhook, an idempotency key, a parent or a caller's cancel,
// RUN.json says so; idem/HASH is the run an Idempotency-Key made (created
// exclusively: two posts with one key make one run).

// runIDPattern is what a run id may be: it names files of the journal.
var runIDPattern = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$`)

// meta is a run's RUN.json.
type meta struct {
	Ensemble  string `json:"ensemble"`
	Webhook   string `json:"webhook,omitempty"`
	Key       string `json:"idempotency_key,omitempty"`
	Cancelled bool   `json:"cancelled,omitempty"`
	Parent    string `json:"parent,omitempty"`
	// EngineEvents is the engine's number of the next event of a run on
	// Options.Engine that the server has not passed on (engine.go).
	EngineEvents int `json:"engine_events,omitempty"`
	// EngineRefused is why the engine refused to start the run
	// (ErrRunExists): the server does not go on with it.
	EngineRefused string `json:"engine_refused,omitempty"`
}

// journal is the folder of the server's own bookkeeping.
type journal struct {
	dir string

	mu    sync.Mutex
	logs  map[string]*eventLog // every run's events: where they are in events.log
	metas map[string]*meta     // RUN.json as read or written (nil: none)
	umu   sync.Mutex           // held by updateMeta

	// events.log, open for reading and appending, and its size; fmu
	// orders the appends, and guards every log's spans (compact.go
	// rewrites them). compacted is the size it had after its last
	// compaction; past maxSize and twice that, grew is told (once).
	fmu       sync.Mutex
	f         *os.File
	size      int64
	compacted int64
	maxSize   int64
	grew      chan struct{}
	// pend are the lines appended after the size events.log has (written),
	// which wait to be written (journalbuf.go); size counts them.
	written  int64
	pend     []byte
	pendLogs []pendLog
}

func openJournal(statePath string) (*journal, error) {
	dir := statePath + ".serve"
	if err := os.MkdirAll(filepath.Join(dir, "idem"), 0o700); err != nil {
		return nil, fmt.Errorf("--state: the server's journal: %w", err)
	}
	j := &journal{dir: dir, logs: map[string]*eventLog{}, metas: map[string]*meta{}, grew: make(chan struct{}, 1)}
	if err := j.openEvents(); err != nil {
		return nil, fmt.Errorf("--state: the server's journal: %w", err)
	}
	return j, nil
}

// openEvents opens events.log and indexes its lines by run. A line cut
// short by a kill (the last, with no newline) is cut off.
func (j *journal) openEvents() error {
	f, err := os.OpenFile(filepath.Join(j.dir, "events.log"), os.O_RDWR|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		return err
	}
	r := bufio.NewReaderSize(f, 256<<10)
	var off int64
	for {
		line, err := r.ReadSlice('\n')
		for errors.Is(err, bufio.ErrBufferFull) {
			more, err2 := r.ReadSlice('\n')
			line, err = append(bytes.Clone(line), more...), err2
		}
		if err != nil { // the end, and a line cut short there
			break
		}
		j.index(line, off)
		off += int64(len(line))
	}
	if err := f.Truncate(off); err != nil {
		f.Close()
		return err
	}
	j.f, j.size, j.compacted, j.written = f, off, off, off
	return nil
}

// index adds a line of events.log at off to its run's log; a line that is
// neither the run's next event nor one it has is skipped. A line of a
// number the run has already takes its place, and the run's lines after
// it go: a write that failed and could not be cut back (flushLocked) left
// them, and the events written after it took their numbers again.
func (j *journal) index(line []byte, off int64) {
	id, rest, ok := bytes.Cut(line, []byte{'\t'})
	if !ok {
		return
	}
	seq, data, ok := bytes.Cut(rest, []byte{'\t'})
	n, err := strconv.Atoi(string(seq))
	l := j.logs[string(id)]
	if l == nil {
		l = &eventLog{j: j, changed: make(chan struct{})}
		j.logs[string(id)] = l
	}
	if !ok || err != nil || n < 1 || n > len(l.spans)+1 {
		return
	}
	l.spans = l.spans[:n-1]
	skip := int64(len(line) - len(data))
	l.spans = append(l.spans, span{off + skip, int64(len(data)) - 1}) // without the newline
}

// close writes what waits, and closes events.log.
func (j *journal) close() error {
	j.flush()
	return j.f.Close()
}

func (j *journal) metaPath(id string) string { return filepath.Join(j.dir, id+".json") }

// meta is a copy of run id's RUN.json; nil when it has none (a run with
// no webhook, key, parent nor cancel, or one the server did not start).
// Only this process writes the journal: what it read once stays true.
func (j *journal) meta(id string) *meta {
	j.mu.Lock()
	m, ok := j.metas[id]
	j.mu.Unlock()
	if !ok {
		if b, err := readcap.ReadFile(j.metaPath(id), 64<<10); err == nil {
			var read meta
			if json.Unmarshal(b, &read) == nil {
				m = &read
			}
		}
		// setMeta may have run since the file was read: what it cached
		// is newer than what was read, and stays.
		j.mu.Lock()
		if cur, ok := j.metas[id]; ok {
			m = cur
		} else {
			j.metas[id] = m
		}
		j.mu.Unlock()
	}
	if m == nil {
		return nil
	}
	c := *m
	return &c
}

// noMeta records that run id, which this server starts, has no RUN.json:
// meta need not look for it.
func (j *journal) noMeta(id string) {
	j.mu.Lock()
	if _, ok := j.metas[id]; !ok {
		j.metas[id] = nil
	}
	j.mu.Unlock()
}

// setMeta writes run id's RUN.json whole (a new file renamed over the old).
func (j *journal) setMeta(id string, m *meta) error {
	b, _ := json.Marshal(m)
	tmp := j.metaPath(id) + ".tmp"
	if err := os.WriteFile(tmp, b, 0o600); err != nil {
		return err
	}
	if err := os.Rename(tmp, j.metaPath(id)); err != nil {
		return err
	}
	c := *m
	j.mu.Lock()
	j.metas[id] = &c
	j.mu.Unlock()
	return nil
}

// updateMeta changes run id's RUN.json with change, one change at a time
// (a new one when it has none, of ensemble name).
func (j *journal) updateMeta(id, name string, change func(*meta)) error {
	j.umu.Lock()
	defer j.umu.Unlock()
	m := j.meta(id)
	if m == nil {
		m = &meta{Ensemble: name}
	}
	change(m)
	return j.setMeta(id, m)
}

// removeMeta removes run id's RUN.json: the run was not saved.
func (j *journal) removeMeta(id string) {
	os.Remove(j.metaPath(id))
	j.mu.Lock()
	delete(j.metas, id)
	j.mu.Unlock()
}

func (j *journal) idemPath(key string) string {
	sum := sha256.Sum256([]byte(key))
	return filepath.Join(j.dir, "idem", hex.EncodeToString(sum[:]))
}

// claimKey binds key to run id, unless another run has it: then that run's
// id is returned, and claimed is false.
func (j *journal) claimKey(key, id string) (owner string, claimed bool, err error) {
	p := j.idemPath(key)
	f, err := os.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if errors.Is(err, fs.ErrExist) {
		b, rerr := readcap.ReadFile(p, 1<<10)
		if rerr != nil {
			return "", false, rerr
		}
		return string(b), false, nil
	}
	if err != nil {
		return "", false, err
	}
	_, err = f.WriteString(id)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return id, true, err
}

// releaseKey forgets key, whose run did not start.
func (j *journal) releaseKey(key string) { os.Remove(j.idemPath(key)) }

// span is where an event's JSON is in events.log.
type span struct{ off, n int64 }

// eventLog is the events of one run: where they are in events.log, and
// while its run goes on, the events themselves.
type eventLog struct {
	j       *journal
	mu      sync.Mutex
	spans   []span   // spans[i] is event i+1's (guarded by j.fmu)
	lines   [][]byte // the events, when loaded
	loaded  bool
	changed chan struct{}
	// watched: someone read the events (after), and may wait for more:
	// each is written, and they are woken, as it comes (journalbuf.go).
	watched bool
	// pending: events of this log wait in j.pend (guarded by j.fmu).
	pending bool
}

// log is run id's event log.
func (j *journal) log(id string) *eventLog {
	j.mu.Lock()
	defer j.mu.Unlock()
	if l := j.logs[id]; l != nil {
		return l
	}
	// room for the events of a small run (a few agents)
	l := &eventLog{j: j, changed: make(chan struct{}), spans: make([]span, 0, 24)}
	j.logs[id] = l
	return l
}

// load reads the events from events.log, when they are not in memory
// (l.mu held).
func (l *eventLog) load() {
	if l.loaded {
		return
	}
	l.j.fmu.Lock()
	defer l.j.fmu.Unlock()
	if l.pending {
		l.j.flushLocked() // what it reads is written
	}
	l.lines = make([][]byte, 0, len(l.spans))
	for _, sp := range l.spans {
		b := make([]byte, sp.n)
		if _, err := l.j.f.ReadAt(b, sp.off); err != nil {
			break
		}
		l.lines = append(l.lines, b)
	}
	l.loaded = true
}

// drop lets go of run id's events in memory once its run has ended (they
// are read from events.log again when needed), and wakes its readers.
func (j *journal) drop(id string) {
	l := j.log(id)
	l.mu.Lock()
	l.loaded, l.lines = false, nil
	close(l.changed)
	l.changed = make(chan struct{})
	l.mu.Unlock()
}
