package serve

import (
	"bufio"
	"bytes"
	"sync"

	"github.com/ensemble-run/ensemble/engine"
)

// compactJSON is res written compact (WriteCompactJSON), through a
// buffered writer borrowed from a pool: without one, the result's writer
// makes a buffer of its own (64 KiB, cleared) for every answer, which cost
// more than writing a small result (docs/performance.md#serving).
func compactJSON(res *engine.Result) ([]byte, error) {
	var buf bytes.Buffer
	bw := resultWriters.Get().(*bufio.Writer)
	bw.Reset(&buf)
	err := res.WriteCompactJSON(bw)
	if err == nil {
		err = bw.Flush()
	}
	bw.Reset(nil)
	resultWriters.Put(bw)
	return buf.Bytes(), err
}

var resultWriters = sync.Pool{New: func() any { return bufio.NewWriterSize(nil, 8<<10) }}
