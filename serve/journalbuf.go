package serve

import (
	"bytes"
	"strconv"
	"sync"

	"github.com/ensemble-run/ensemble/ensemble"
	"github.com/ensemble-run/ensemble/events"
	"github.com/ensemble-run/ensemble/session"
	"github.com/ensemble-run/ensemble/state"
)

// The events of a new run wait in memory (journal.pend) and are written
// to events.log together, rather than a write each: before the run saves
// anything (journaled), so that no state is committed before the events
// that led to it are in the journal, and at once as soon as someone reads
// the run's events (eventLog.after), so that no reader ever sees an event
// that is not in the journal. A kill loses only events that nobody read
// and that no saved turn follows: those of a turn that runs again when
// the server starts again, whose events come again under the same
// numbers. A write of a served run's events per event was a tenth of its
// CPU (docs/performance.md#serving).

// pendLog is a log with events in pend, and how many it had written.
type pendLog struct {
	l *eventLog
	n int
}

// maxPend is the most pend keeps of its buffer once written.
const maxPend = 1 << 20

// pendEvent appends run id's event seq to the lines that wait, and
// returns where its JSON will be in events.log (j.fmu held).
func (j *journal) pendEvent(l *eventLog, id string, seq int, data []byte) span {
	if !l.pending {
		l.pending = true
		j.pendLogs = append(j.pendLogs, pendLog{l, len(l.spans)})
	}
	start := len(j.pend)
	j.pend = append(j.pend, id...)
	j.pend = append(j.pend, '\t')
	j.pend = strconv.AppendInt(j.pend, int64(seq), 10)
	j.pend = append(j.pend, '\t')
	skip := len(j.pend) - start
	j.pend = append(j.pend, data...)
	j.pend = append(j.pend, '\n')
	sp := span{j.size + int64(skip), int64(len(data))}
	j.size += int64(len(j.pend) - start)
	if j.maxSize > 0 && j.size > j.maxSize && j.size > 2*j.compacted {
		select {
		case j.grew <- struct{}{}:
		default:
		}
	}
	return sp
}

// flushLocked writes the lines that wait, in one write (j.fmu held). When
// it fails, they are lost, as an event whose write failed always was:
// events.log is cut back to what it held, and each log to the events
// written (eventLog.trim cuts what it holds in memory).
func (j *journal) flushLocked() error {
	if len(j.pend) == 0 {
		return nil
	}
	_, err := j.f.Write(j.pend)
	if err != nil {
		j.f.Truncate(j.written)
		j.size = j.written
	} else {
		j.written = j.size
	}
	for i, p := range j.pendLogs {
		if err != nil {
			p.l.spans = p.l.spans[:p.n]
		}
		p.l.pending = false
		j.pendLogs[i] = pendLog{}
	}
	j.pendLogs = j.pendLogs[:0]
	j.pend = j.pend[:0]
	if cap(j.pend) > maxPend {
		j.pend = nil
	}
	return err
}

// flush writes the lines that wait.
func (j *journal) flush() error {
	j.fmu.Lock()
	defer j.fmu.Unlock()
	return j.flushLocked()
}

// add appends an event's JSON to run id's log (data is not kept: the
// caller may reuse it). Unless it waits (wait, and nobody reads the log),
// it is written at once with those that wait, and the log's readers are
// woken. An event that waits is not kept in memory either: a reader who
// comes reads it from events.log (load), once written.
func (l *eventLog) add(id string, data []byte, wait bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	j := l.j
	if wait && !l.watched {
		j.fmu.Lock()
		l.spans = append(l.spans, j.pendEvent(l, id, len(l.spans)+1, data))
		j.fmu.Unlock()
		l.loaded, l.lines = false, nil
		return
	}
	l.load()
	j.fmu.Lock()
	l.trim()
	l.spans = append(l.spans, j.pendEvent(l, id, len(l.spans)+1, data))
	l.lines = append(l.lines, bytes.Clone(data))
	err := j.flushLocked()
	l.trim()
	j.fmu.Unlock()
	if err == nil {
		close(l.changed)
		l.changed = make(chan struct{})
	}
}

// trim lets go of the events in memory that were lost with a write that
// failed (l.mu and j.fmu held).
func (l *eventLog) trim() {
	if l.loaded && len(l.lines) > len(l.spans) {
		l.lines = l.lines[:len(l.spans)]
	}
}

// after is the events after sequence number seq, the sequence number of
// the first, and a channel closed when more come. Those that wait are
// written first, and every later one as it comes.
func (l *eventLog) after(seq int) ([][]byte, int, <-chan struct{}) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.watched = true
	l.load()
	l.j.fmu.Lock()
	l.j.flushLocked()
	l.trim()
	l.j.fmu.Unlock()
	seq = max(0, min(seq, len(l.lines)))
	return l.lines[seq:len(l.lines):len(l.lines)], seq + 1, l.changed
}

// journaled is the saver of a new run whose events wait (Runs.runSink):
// each of its saves writes the events that wait first, when some of them
// are its run's (l); another run's save may have written them already.
type journaled struct {
	session.Saver
	j *journal
	l *eventLog
}

func (s journaled) flush() {
	s.j.fmu.Lock()
	if s.l.pending {
		s.j.flushLocked()
	}
	s.j.fmu.Unlock()
}

func (s journaled) Begin(e *ensemble.Ensemble, f *state.File) error {
	s.flush()
	return s.Saver.Begin(e, f)
}

func (s journaled) AfterTurn(st *state.State) error {
	s.flush()
	return s.Saver.AfterTurn(st)
}

func (s journaled) Finish(st *state.State, reason string, stopped *state.Stopped) error {
	s.flush()
	return s.Saver.Finish(st, reason, stopped)
}

// emit appends ev, redacted, to run id's log, encoded in a buffer of a
// pool (add keeps no reference to it): an event that waits costs no
// allocation of its own.
func (rs *Runs) emit(id string, ev events.Event, wait bool) {
	bp := eventBufs.Get().(*[]byte)
	b, err := events.AppendJSON((*bp)[:0], ev)
	if err == nil {
		rs.j.log(id).add(id, rs.redactBytes(b), wait)
	}
	if cap(b) <= 64<<10 {
		*bp = b
		eventBufs.Put(bp)
	}
}

var eventBufs = sync.Pool{New: func() any { b := make([]byte, 0, 4<<10); return &b }}
