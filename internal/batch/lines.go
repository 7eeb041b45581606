package batch

import (
	"bufio"
	"fmt"
	"maps"
)

// lineWriter writes a batch's lines to its output in input order: each
// outcome waits among the pending until every line before it is written.
type lineWriter struct {
	b       *Batch
	st      *Stats
	c       *counters
	bw      *bufio.Writer
	pending map[int]*Outcome // by position, not yet written
	next    int              // the position of the next line to write
	failed  bool             // writing failed: nothing more is written
}

// newLineWriter starts with the outcomes of the inputs that are done (a
// resumed batch's), whose lines the output holds up to b.Written.
func (b *Batch) newLineWriter(st *Stats, c *counters) *lineWriter {
	pending := maps.Clone(b.Done)
	if pending == nil {
		pending = map[int]*Outcome{}
	}
	return &lineWriter{b: b, st: st, c: c, bw: bufio.NewWriterSize(b.Out, 64<<10), pending: pending}
}

// advance writes the lines that no missing line holds back any more, and
// counts their outcomes.
func (w *lineWriter) advance() {
	for w.next < len(w.b.Inputs) {
		o := w.pending[w.next]
		if o == nil {
			break
		}
		delete(w.pending, w.next)
		if w.next >= w.b.Written && !w.failed {
			if _, err := w.bw.Write(o.Line); err != nil {
				w.fail(err)
			}
		}
		w.st.add(&o.Meta)
		w.c.finished.Add(1)
		if o.Meta.Code != 0 {
			w.c.failed.Add(1)
		}
		w.next++
	}
	if !w.failed {
		if err := w.bw.Flush(); err != nil {
			w.fail(err)
		}
	}
}

func (w *lineWriter) fail(err error) {
	w.failed = true
	w.st.Errs = append(w.st.Errs, fmt.Sprintf("writing the output: %v", err))
}

// take keeps an outcome (Save), to be written by advance; an interrupted
// run has no line, and marks the batch interrupted.
func (w *lineWriter) take(o *Outcome) {
	if o.interrupted {
		w.st.Interrupted = true
		return
	}
	if w.b.Save != nil && o.Meta.Reason != "error" { // the machinery's failures run again when resumed
		if err := w.b.Save(o); err != nil {
			w.st.Errs = append(w.st.Errs, err.Error())
		}
	}
	w.pending[o.Index] = o
}

// finish counts what ended after the first gap, when there is one (the
// batch was interrupted): counted, not written; its line comes when the
// gap is filled (by a resumed batch with --state).
func (w *lineWriter) finish() {
	if w.next < len(w.b.Inputs) {
		w.st.Interrupted = true
		for _, o := range w.pending {
			w.st.add(&o.Meta)
		}
	}
	w.st.Written = w.next
}
