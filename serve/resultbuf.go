package serve

import (
	"bufio"
	"bytes"
	"io"
	"sync"

	"github.com/ensemble-run/ensemble/engine"
	"github.com/ensemble-run/ensemble/events"
)

// compactJSON is res written compact (WriteCompactJSON), through a
// buffered writer borrowed from a pool: without one, the result's writer
// makes a buffer of its own (64 KiB, cleared) for every answer, which cost
// more than writing a small result (docs/performance.md#serving).
func compactJSON(res *engine.Result) ([]byte, error) {
	// room for a result with its history (a few KiB), grown from 64
	// bytes otherwise
	buf := bytes.NewBuffer(make([]byte, 0, 4<<10))
	bw := resultWriters.Get().(*bufio.Writer)
	bw.Reset(buf)
	err := res.WriteCompactJSON(bw)
	if err == nil {
		err = bw.Flush()
	}
	bw.Reset(nil)
	resultWriters.Put(bw)
	return buf.Bytes(), err
}

var resultWriters = sync.Pool{New: func() any { return bufio.NewWriterSize(nil, 8<<10) }}

// writtenResult is a result written compact (compactJSON), as the
// run_completed event of a new run carries it: the event writes these
// bytes rather than writing the result again, and the answer of a waited
// POST is the same bytes (keptResult), where it wrote the result twice.
type writtenResult []byte

func (b writtenResult) WriteCompactJSON(w io.Writer) error {
	_, err := w.Write(b)
	return err
}

// WritesAsMarshal: only a result that writes as json.Marshal does is
// written ahead (runSink).
func (writtenResult) WritesAsMarshal() bool { return true }

// MarshalJSON is the bytes, for encoding/json.
func (b writtenResult) MarshalJSON() ([]byte, error) { return b, nil }

// keptResult is the result a run's run_completed event carried, and its
// bytes (Runs.results, by run id, until the run's end takes it: launchWith).
type keptResult struct {
	res *engine.Result
	b   []byte
}

// writeAhead makes ev, the run_completed event of run id, carry its
// result written compact, and keeps those bytes for the run's answer.
func (rs *Runs) writeAhead(id string, ev *events.Event) {
	res, ok := ev.Result.(*engine.Result)
	if !ok || res == nil || !res.WritesAsMarshal() {
		return
	}
	b, err := compactJSON(res)
	if err != nil {
		return // Marshal reports it
	}
	ev.Result = writtenResult(b)
	rs.results.Store(id, keptResult{res, b})
}

// takeWritten is what writeAhead kept of run id's result res, and forgets
// it: nil when it kept none, or of another result.
func (rs *Runs) takeWritten(id string, res *engine.Result) []byte {
	v, ok := rs.results.LoadAndDelete(id)
	if !ok || v.(keptResult).res != res {
		return nil
	}
	return v.(keptResult).b
}
