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
// not hold. For each run, RUN.json (its ensemble, webhook, idempotency key,
// whether a caller cancelled it) and RUN.events (its events, one a line,
// "SEQ<TAB>JSON", appended as they happen and kept across restarts, so that
// an event stream resumes from any sequence number); and idem/HASH, the run
// an Idempotency-Key made (created exclusively: two posts with one key make
// one run).

// runIDPattern is what a run id may be: it names files of the journal.
var runIDPattern = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$`)

// meta is a run's RUN.json.
type meta struct {
	Ensemble  string `json:"ensemble"`
	Webhook   string `json:"webhook,omitempty"`
	Key       string `json:"idempotency_key,omitempty"`
	Cancelled bool   `json:"cancelled,omitempty"`
	Parent    string `json:"parent,omitempty"`
}

// journal is the folder of the server's own bookkeeping.
type journal struct {
	dir string

	mu   sync.Mutex
	logs map[string]*eventLog
}

func openJournal(statePath string) (*journal, error) {
	dir := statePath + ".serve"
	if err := os.MkdirAll(filepath.Join(dir, "idem"), 0o700); err != nil {
		return nil, fmt.Errorf("--state: the server's journal: %w", err)
	}
	return &journal{dir: dir, logs: map[string]*eventLog{}}, nil
}

func (j *journal) metaPath(id string) string { return filepath.Join(j.dir, id+".json") }

// meta reads run id's RUN.json; nil when it has none (a run the server did
// not start: one the inspector forked, say).
func (j *journal) meta(id string) *meta {
	b, err := readcap.ReadFile(j.metaPath(id), 64<<10)
	if err != nil {
		return nil
	}
	var m meta
	if json.Unmarshal(b, &m) != nil {
		return nil
	}
	return &m
}

// setMeta writes run id's RUN.json whole (a new file renamed over the old).
func (j *journal) setMeta(id string, m *meta) error {
	b, _ := json.Marshal(m)
	tmp := j.metaPath(id) + ".tmp"
	if err := os.WriteFile(tmp, b, 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, j.metaPath(id))
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

// keyOwner is the run key made; "".
func (j *journal) keyOwner(key string) string {
	b, err := readcap.ReadFile(j.idemPath(key), 1<<10)
	if err != nil {
		return ""
	}
	return string(b)
}

// eventLog is the events of one run: in memory, and appended to its file.
type eventLog struct {
	mu      sync.Mutex
	path    string
	lines   [][]byte // lines[i] is event i+1's JSON
	changed chan struct{}
}

// log is run id's event log, read from its file the first time.
func (j *journal) log(id string) *eventLog {
	j.mu.Lock()
	defer j.mu.Unlock()
	if l := j.logs[id]; l != nil {
		return l
	}
	l := &eventLog{path: filepath.Join(j.dir, id+".events"), changed: make(chan struct{})}
	if f, err := os.Open(l.path); err == nil {
		sc := bufio.NewScanner(f)
		sc.Buffer(make([]byte, 64<<10), maxEventLine)
		for sc.Scan() {
			seq, data, ok := bytes.Cut(sc.Bytes(), []byte{'\t'})
			n, err := strconv.Atoi(string(seq))
			if !ok || err != nil || n != len(l.lines)+1 {
				break // a line cut short by a kill: the events end before it
			}
			l.lines = append(l.lines, bytes.Clone(data))
		}
		f.Close()
	}
	j.logs[id] = l
	return l
}

// maxEventLine caps an event's line.
const maxEventLine = 16 << 20

// add appends an event's JSON, returns its sequence number and wakes the
// readers.
func (l *eventLog) add(data []byte) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.lines = append(l.lines, data)
	seq := len(l.lines)
	if f, err := os.OpenFile(l.path, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600); err == nil {
		line := make([]byte, 0, len(data)+12)
		line = strconv.AppendInt(line, int64(seq), 10)
		line = append(line, '\t')
		line = append(line, data...)
		line = append(line, '\n')
		f.Write(line)
		f.Close()
	}
	close(l.changed)
	l.changed = make(chan struct{})
	return seq
}

// after is the events after sequence number seq, the sequence number of
// the first, and a channel closed when more come.
func (l *eventLog) after(seq int) ([][]byte, int, <-chan struct{}) {
	l.mu.Lock()
	defer l.mu.Unlock()
	seq = max(0, min(seq, len(l.lines)))
	return l.lines[seq:len(l.lines):len(l.lines)], seq + 1, l.changed
}

// wake wakes the readers of the log without an event: the run ended.
func (l *eventLog) wake() {
	l.mu.Lock()
	defer l.mu.Unlock()
	close(l.changed)
	l.changed = make(chan struct{})
}
