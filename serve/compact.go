package serve

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/ensemble-run/ensemble/engine"
)

// The events journal (events.log) is compacted: the events of a run that
// ended (completed, failed, timed out, cancelled by a caller: anything but
// a run that goes on, was interrupted or waits for an answer) are dropped
// once it has ended EventsRetention ago. It is compacted when the server
// starts, and while it runs whenever the file has grown past EventsMaxSize
// and to twice its size after the last compaction. A run whose events are
// kept keeps them all, under the same sequence numbers: Last-Event-ID
// resumes as before. The stream of a run whose events were dropped is
// empty.

// Defaults of Options.EventsRetention and Options.EventsMaxSize.
const (
	defaultEventsRetention = 7 * 24 * time.Hour
	defaultEventsMaxSize   = 64 << 20
)

// compact rewrites events.log without the lines of the runs in drop, and
// points the logs of the others at their events in the new file. It holds
// j.fmu throughout: appends wait for it.
func (j *journal) compact(drop map[string]bool) error {
	j.fmu.Lock()
	defer j.fmu.Unlock()
	if err := j.flushLocked(); err != nil { // the events that wait, first
		return err
	}
	path := filepath.Join(j.dir, "events.log")
	// Opened for appending, as events.log is: once renamed it is the
	// journal's file, with no reopening that could fail and leave the old,
	// unlinked one in use.
	tmp, err := os.OpenFile(path+".tmp", os.O_RDWR|os.O_CREATE|os.O_TRUNC|os.O_APPEND, 0o600)
	if err != nil {
		return err
	}
	spans, size, err := copyKept(io.NewSectionReader(j.f, 0, j.size), tmp, drop)
	if err == nil {
		err = tmp.Sync() // the new file whole before it takes the old one's place
	}
	if err == nil {
		err = os.Rename(path+".tmp", path)
	}
	if err != nil {
		tmp.Close()
		os.Remove(path + ".tmp")
		return err
	}
	j.f.Close()
	j.f, j.size, j.compacted, j.written = tmp, size, size, size
	j.mu.Lock()
	for id, l := range j.logs {
		if drop[id] {
			delete(j.logs, id)
			delete(j.metas, id) // read again from RUN.json if asked
		}
		l.spans = spans[id]
	}
	j.mu.Unlock()
	return nil
}

// copyKept copies the lines of events.log (r) whose run is not in drop to
// w, and returns where each kept run's events are in w, and w's size.
func copyKept(r io.Reader, w io.Writer, drop map[string]bool) (map[string][]span, int64, error) {
	br := bufio.NewReaderSize(r, 256<<10)
	bw := bufio.NewWriterSize(w, 256<<10)
	spans := map[string][]span{}
	var off int64
	for {
		line, err := br.ReadSlice('\n')
		for errors.Is(err, bufio.ErrBufferFull) {
			more, err2 := br.ReadSlice('\n')
			line, err = append(bytes.Clone(line), more...), err2
		}
		if err != nil {
			break // the end (every line appended ends with its newline)
		}
		id, rest, ok := bytes.Cut(line, []byte{'\t'})
		if !ok || drop[string(id)] {
			continue
		}
		_, data, ok := bytes.Cut(rest, []byte{'\t'})
		if !ok {
			continue
		}
		if _, err := bw.Write(line); err != nil {
			return nil, 0, err
		}
		skip := int64(len(line) - len(data))
		spans[string(id)] = append(spans[string(id)], span{off + skip, int64(len(data)) - 1})
		off += int64(len(line))
	}
	return spans, off, bw.Flush()
}

// ended runs: the runs of the database whose events may be dropped now,
// those that ended before the retention.
func (rs *Runs) endedRuns(now time.Time) (map[string]bool, error) {
	rs.rd.Hold()
	runs, err := rs.rd.Runs()
	rs.rd.Release()
	if err != nil {
		return nil, err
	}
	drop := map[string]bool{}
	for _, r := range runs {
		if now.Sub(r.Saved) < rs.o.EventsRetention {
			continue
		}
		switch r.CompletionReason {
		case "", engine.Cancelled, engine.AwaitingInput:
			if m := rs.j.meta(r.ID); m == nil || !m.Cancelled {
				continue // goes on, or may
			}
		}
		rs.mu.Lock()
		_, active := rs.active[r.ID]
		rs.mu.Unlock()
		if !active {
			drop[r.ID] = true
		}
	}
	return drop, nil
}

// compactEvents drops the events of the runs that ended before the
// retention from the journal.
func (rs *Runs) compactEvents() {
	drop, err := rs.endedRuns(time.Now())
	if err == nil && len(drop) > 0 {
		err = rs.j.compact(drop)
	}
	if err != nil {
		rs.logf("compacting the events journal: %s", err)
	}
}

// compactor compacts the journal each time it grows past its bound, until
// the server stops.
func (rs *Runs) compactor() {
	defer rs.wg.Done()
	for {
		select {
		case <-rs.j.grew:
			rs.compactEvents()
			// a journal still as large (runs that may go on): not again
			// before it doubles
			rs.j.fmu.Lock()
			rs.j.compacted = rs.j.size
			rs.j.fmu.Unlock()
		case <-rs.stop:
			return
		}
	}
}
