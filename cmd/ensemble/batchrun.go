package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ensemble-run/ensemble/engine"
	"github.com/ensemble-run/ensemble/report"
	"github.com/ensemble-run/ensemble/state"
)

// runOneFunc runs the ensemble on one input of a batch and returns the
// run's result. The local engine is one (localBatch.runOne); a batch runs
// its inputs through whichever it is given. An error is a failure of the
// machinery (a state database that cannot be written), not of the run.
type runOneFunc func(ctx context.Context, in *batchInput) (*engine.Result, error)

// batchOutcome is what one input of a batch came to: its output line and
// what the summary counts of it.
type batchOutcome struct {
	idx  int
	line []byte // {"id": …, "result": …} and a newline
	meta batchMeta
	// interrupted: the run was cut short by Ctrl-C; it has no line, and a
	// resumed batch runs it again.
	interrupted bool
}

// batchMeta is what the summary counts of an input's run; it is saved with
// its line.
type batchMeta struct {
	Reason string      `json:"completion_reason"`
	Code   int         `json:"exit_code"`
	Usage  state.Usage `json:"usage"`
}

// batchRun runs the inputs of a batch, concurrency at a time, and writes
// their lines to out in input order, each as soon as every line before it
// is written.
type batchRun struct {
	inputs      []*batchInput
	runOne      runOneFunc
	concurrency int
	// done holds the outcomes of inputs that need not run (a resumed batch's
	// saved lines), by position.
	done map[int]*batchOutcome
	// written is how many lines out holds already (a resumed batch's output
	// file): they are not written again.
	written int
	out     io.Writer
	// save keeps an outcome before its line is written (--state); nil: none.
	save func(*batchOutcome) error
	// progress, when set, receives a status line to redraw (a terminal).
	progress io.Writer
}

// batchStats is what the summary says of a batch.
type batchStats struct {
	inputs, done, failed, written int
	completedFailing              int // completed, but with an execution that failed unhandled
	interrupted                   bool
	reasons                       map[string]int
	codes                         map[int]int // the exit codes of the runs that ended otherwise than completed without failure
	usage                         state.Usage
	errs                          []string // the batch's own failures (writing the output, saving)
	elapsed                       time.Duration
}

func (s *batchStats) add(m *batchMeta) {
	s.done++
	s.reasons[m.Reason]++
	if m.Code != 0 && m.Reason == engine.Completed {
		s.completedFailing++
	}
	if m.Code != 0 {
		s.failed++
		s.codes[m.Code]++
	}
	s.usage.Add(&m.Usage)
}

// exitCode is the batch's exit code (docs/cli.md#ensemble-batch): 0 when
// every run completed without failure; 130 when interrupted; the runs' one
// exit code when every run that did not succeed ended with the same; else
// 1. A batch that could not save or write its lines exits 1 too.
func (s *batchStats) exitCode() int {
	switch {
	case s.interrupted:
		return engine.ExitCancelled
	case len(s.codes) == 1 && len(s.errs) == 0:
		for c := range s.codes {
			return c
		}
	case len(s.codes) > 1 || len(s.errs) > 0:
		return engine.ExitFailed
	}
	return engine.ExitOK
}

// run runs the batch until every input has its line or ctx is cancelled.
func (b *batchRun) run(ctx context.Context) *batchStats {
	start := time.Now()
	st := &batchStats{inputs: len(b.inputs), reasons: map[string]int{}, codes: map[int]int{}}
	todo := make(chan *batchInput)
	results := make(chan *batchOutcome, b.concurrency)
	var running, finished, failed atomic.Int64
	var wg sync.WaitGroup
	for range min(b.concurrency, len(b.inputs)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for in := range todo {
				running.Add(1)
				o := b.one(ctx, in)
				running.Add(-1)
				results <- o
			}
		}()
	}
	go func() {
		defer close(todo)
		for _, in := range b.inputs {
			if b.done[in.idx] != nil {
				continue
			}
			if ctx.Err() != nil { // not a run started only to be cancelled
				return
			}
			select {
			case todo <- in:
			case <-ctx.Done():
				return
			}
		}
	}()
	go func() { wg.Wait(); close(results) }()

	stopProgress := func() {}
	if b.progress != nil {
		stopProgress = b.showProgress(st.inputs, &running, &finished, &failed, start)
	}
	bw := bufio.NewWriterSize(b.out, 64<<10)
	pending := maps.Clone(b.done)
	if pending == nil {
		pending = map[int]*batchOutcome{}
	}
	next := 0
	writeErr := false
	advance := func() {
		for next < len(b.inputs) {
			o := pending[next]
			if o == nil {
				break
			}
			delete(pending, next)
			if next >= b.written && !writeErr {
				if _, err := bw.Write(o.line); err != nil {
					writeErr = true
					st.errs = append(st.errs, fmt.Sprintf("writing the output: %v", err))
				}
			}
			st.add(&o.meta)
			finished.Add(1)
			if o.meta.Code != 0 {
				failed.Add(1)
			}
			next++
		}
		if !writeErr {
			if err := bw.Flush(); err != nil {
				writeErr = true
				st.errs = append(st.errs, fmt.Sprintf("writing the output: %v", err))
			}
		}
	}
	advance()
	for o := range results {
		if o.interrupted {
			st.interrupted = true
			continue
		}
		if b.save != nil && o.meta.Reason != "error" { // the machinery's failures run again when resumed
			if err := b.save(o); err != nil {
				st.errs = append(st.errs, err.Error())
			}
		}
		pending[o.idx] = o
		advance()
	}
	stopProgress()
	if next < len(b.inputs) {
		st.interrupted = true
		// What ended after the first gap is counted, not written: its line
		// comes when the gap is filled (by a resumed batch with --state).
		for _, o := range pending {
			st.add(&o.meta)
		}
	}
	st.written = next
	st.elapsed = time.Since(start)
	return st
}

// one runs one input and makes its line.
func (b *batchRun) one(ctx context.Context, in *batchInput) *batchOutcome {
	o := &batchOutcome{idx: in.idx}
	res, err := b.runOne(ctx, in)
	if err != nil {
		line := append([]byte(`{"id":`), in.id...)
		msg, _ := json.Marshal(err.Error())
		o.line = append(append(append(line, `,"error":`...), msg...), "}\n"...)
		o.meta = batchMeta{Reason: "error", Code: engine.ExitFailed}
		return o
	}
	if res.CompletionReason == engine.Cancelled && ctx.Err() != nil {
		o.interrupted = true
		return o
	}
	o.meta = batchMeta{Reason: res.CompletionReason, Code: res.ExitCode(), Usage: res.Usage}
	line, err := resultLine(in.id, res)
	if err != nil {
		msg, _ := json.Marshal("writing the result: " + err.Error())
		line = append(append(append(append([]byte(`{"id":`), in.id...), `,"error":`...), msg...), "}\n"...)
		o.meta.Code, o.meta.Reason = engine.ExitFailed, "error"
	}
	o.line = line
	return o
}

// resultLine is {"id": ID, "result": RESULT} on one line, the result as
// run --output json prints it, compact.
func resultLine(id []byte, res *engine.Result) ([]byte, error) {
	jb := jsonBufs.Get().(*jsonBuf)
	defer jsonBufs.Put(jb)
	jb.line.Reset()
	jb.line.WriteString(`{"id":`)
	jb.line.Write(id)
	jb.line.WriteString(`,"result":`)
	if err := res.WriteCompactJSON(jb.w); err != nil {
		jb.w.Reset(&jb.line)
		return nil, err
	}
	jb.line.WriteString("}\n")
	return bytes.Clone(jb.line.Bytes()), nil
}

// jsonBuf is where a result line is written: its buffers, reused from one
// line to the next.
type jsonBuf struct {
	line bytes.Buffer
	w    *bufio.Writer // into line
}

var jsonBufs = sync.Pool{New: func() any {
	jb := &jsonBuf{}
	jb.w = bufio.NewWriterSize(&jb.line, 16<<10)
	return jb
}}

// showProgress redraws a status line on w until the returned function is
// called, which takes it down.
func (b *batchRun) showProgress(total int, running, finished, failed *atomic.Int64, start time.Time) func() {
	w := b.progress
	stop := make(chan struct{})
	done := make(chan struct{})
	draw := func() {
		fmt.Fprintf(w, "\r\x1b[Kbatch: %d/%d done (%d failed), %d running, %s", finished.Load(), total, failed.Load(), running.Load(),
			report.Seconds(time.Since(start).Seconds()))
	}
	go func() {
		defer close(done)
		t := time.NewTicker(report.DefaultInterval)
		defer t.Stop()
		for {
			select {
			case <-t.C:
				draw()
			case <-stop:
				fmt.Fprint(w, "\r\x1b[K")
				return
			}
		}
	}()
	return func() { close(stop); <-done }
}

// summary writes the batch's summary (docs/cli.md#ensemble-batch).
func (s *batchStats) summary(w io.Writer, resume string) {
	head := fmt.Sprintf("batch of %s in %s: %d completed, %d failed", report.Count(s.inputs, "input"),
		report.Seconds(s.elapsed.Seconds()), s.done-s.failed, s.failed)
	if s.interrupted {
		head = fmt.Sprintf("batch of %s interrupted after %s: %d of %d done (%d failed), %s written", report.Count(s.inputs, "input"),
			report.Seconds(s.elapsed.Seconds()), s.done, s.inputs, s.failed, report.Count(s.written, "line"))
	}
	fmt.Fprintf(w, "ensemble: %s\n", head)
	if len(s.reasons) > 0 {
		var parts []string
		for _, r := range slices.Sorted(maps.Keys(s.reasons)) {
			part := fmt.Sprintf("%s %d", r, s.reasons[r])
			if r == engine.Completed && s.completedFailing > 0 {
				part += fmt.Sprintf(" (%d with a failed execution)", s.completedFailing)
			}
			parts = append(parts, part)
		}
		fmt.Fprintf(w, "  by completion reason: %s\n", strings.Join(parts, ", "))
	}
	fmt.Fprintf(w, "  usage: %s\n", report.UsageText(s.usage))
	for _, e := range s.errs {
		fmt.Fprintf(w, "ensemble: %s\n", e)
	}
	if s.interrupted && resume != "" {
		fmt.Fprintf(w, "ensemble: the rest goes on with: %s\n", resume)
	}
}
