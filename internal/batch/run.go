package batch

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
	"github.com/ensemble-run/ensemble/internal/report"
	"github.com/ensemble-run/ensemble/state"
)

// RunOne runs the ensemble on one input of a batch and returns the run's
// result. A local session is one (Local); a batch runs its inputs through
// whichever it is given (a Temporal cluster's is another). An error is a
// failure of the machinery (a state database that cannot be written), not
// of the run.
type RunOne func(ctx context.Context, in *Input) (*engine.Result, error)

// Outcome is what one input of a batch came to: its output line and what
// the summary counts of it.
type Outcome struct {
	Index int
	Line  []byte // {"id": …, "result": …} and a newline
	Meta  Meta
	// interrupted: the run was cut short by Ctrl-C; it has no line, and a
	// resumed batch runs it again.
	interrupted bool
}

// Meta is what the summary counts of an input's run; it is saved with its
// line.
type Meta struct {
	Reason string      `json:"completion_reason"`
	Code   int         `json:"exit_code"`
	Usage  state.Usage `json:"usage"`
}

// Batch runs the inputs of a batch, Concurrency at a time, and writes their
// lines to Out in input order, each as soon as every line before it is
// written.
type Batch struct {
	Inputs      []*Input
	RunOne      RunOne
	Concurrency int
	// Done holds the outcomes of inputs that need not run (a resumed
	// batch's saved lines), by position.
	Done map[int]*Outcome
	// Written is how many lines Out holds already (a resumed batch's output
	// file): they are not written again.
	Written int
	Out     io.Writer
	// Save keeps an outcome before its line is written (--state); nil: none.
	Save func(*Outcome) error
	// Commit, when set, makes what Save kept durable: it is called once for
	// the outcomes that came together, before their lines are written.
	Commit func() error
	// Progress, when set, receives a status line to redraw (a terminal).
	Progress io.Writer
}

// Stats is what the summary says of a batch.
type Stats struct {
	Inputs, Done, Failed, Written int
	CompletedFailing              int // completed, but with an execution that failed unhandled
	Interrupted                   bool
	Reasons                       map[string]int
	Codes                         map[int]int // the exit codes of the runs that ended otherwise than completed without failure
	Usage                         state.Usage
	Errs                          []string // the batch's own failures (writing the output, saving)
	Elapsed                       time.Duration
}

func (s *Stats) add(m *Meta) {
	s.Done++
	s.Reasons[m.Reason]++
	if m.Code != 0 && m.Reason == engine.Completed {
		s.CompletedFailing++
	}
	if m.Code != 0 {
		s.Failed++
		s.Codes[m.Code]++
	}
	s.Usage.Add(&m.Usage)
}

// ExitCode is the batch's exit code (docs/cli.md#ensemble-batch): 0 when
// every run completed without failure; 130 when interrupted; the runs' one
// exit code when every run that did not succeed ended with the same; else
// 1. A batch that could not save or write its lines exits 1 too.
func (s *Stats) ExitCode() int {
	switch {
	case s.Interrupted:
		return engine.ExitCancelled
	case len(s.Codes) == 1 && len(s.Errs) == 0:
		for c := range s.Codes {
			return c
		}
	case len(s.Codes) > 1 || len(s.Errs) > 0:
		return engine.ExitFailed
	}
	return engine.ExitOK
}

// Run runs the batch until every input has its line or ctx is cancelled:
// its workers run the inputs (dispatch) while the lines are written in
// input order as the outcomes come (lineWriter, collect).
func (b *Batch) Run(ctx context.Context) *Stats {
	start := time.Now()
	st := &Stats{Inputs: len(b.Inputs), Reasons: map[string]int{}, Codes: map[int]int{}}
	c := &counters{}
	results := b.dispatch(ctx, c)
	stopProgress := func() {}
	if b.Progress != nil {
		stopProgress = b.showProgress(st.Inputs, c, start)
	}
	w := b.newLineWriter(st, c)
	w.advance()
	b.collect(results, w.take, w.advance, st)
	stopProgress()
	w.finish()
	st.Elapsed = time.Since(start)
	return st
}

// RunTo is Run, then closeOut (the output's close, whose error is one of
// the batch's), then, for a batch saved in st (nil: not saved) that ran
// every input without an error, marks it done: a resume has nothing left.
func (b *Batch) RunTo(ctx context.Context, st *Store, closeOut func() error) *Stats {
	stats := b.Run(ctx)
	if err := closeOut(); err != nil {
		stats.Errs = append(stats.Errs, fmt.Sprintf("writing the output: %v", err))
	}
	if st != nil && !stats.Interrupted && len(stats.Errs) == 0 {
		if err := st.Finish(); err != nil {
			stats.Errs = append(stats.Errs, err.Error())
		}
	}
	return stats
}

// counters are what the progress line shows: the runs going, the inputs
// whose lines are written, and how many of them failed.
type counters struct {
	running, finished, failed atomic.Int64
}

// dispatch starts Concurrency workers, which run the inputs that are not
// done, in order, until ctx is cancelled; their outcomes come on the
// channel it returns, closed once every worker has stopped.
func (b *Batch) dispatch(ctx context.Context, c *counters) <-chan *Outcome {
	todo := make(chan *Input)
	results := make(chan *Outcome, b.Concurrency)
	var wg sync.WaitGroup
	for range min(b.Concurrency, len(b.Inputs)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for in := range todo {
				c.running.Add(1)
				o := b.one(ctx, in)
				c.running.Add(-1)
				results <- o
			}
		}()
	}
	go b.feed(ctx, todo)
	go func() { wg.Wait(); close(results) }()
	return results
}

// feed gives the workers the inputs that are not done, in order, and
// closes todo after the last or once ctx is cancelled.
func (b *Batch) feed(ctx context.Context, todo chan<- *Input) {
	defer close(todo)
	for _, in := range b.Inputs {
		if b.Done[in.Index] != nil {
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
}

// commitEvery and commitAge bound how long the outcomes saved (Save) wait
// for their commit (Commit), and their lines for being written: a commit
// for the outcomes that came within commitAge of the first not committed,
// or for commitEvery of them, rather than one for each.
const (
	commitEvery = 64
	commitAge   = 2 * time.Millisecond
)

// collect takes the outcomes as they come, and writes their lines
// (advance) once what Save kept of them is committed.
func (b *Batch) collect(results <-chan *Outcome, take func(*Outcome), advance func(), st *Stats) {
	if b.Commit == nil {
		for o := range results {
			take(o)
			advance()
		}
		return
	}
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	waiting := 0
	commit := func() {
		timer.Stop()
		waiting = 0
		if err := b.Commit(); err != nil {
			st.Errs = append(st.Errs, err.Error())
		}
		advance()
	}
	for {
		select {
		case o, ok := <-results:
			if !ok {
				commit()
				return
			}
			take(o)
			if waiting++; waiting == 1 {
				timer.Reset(commitAge)
			} else if waiting >= commitEvery {
				commit()
			}
		case <-timer.C:
			commit()
		}
	}
}

// one runs one input and makes its line.
func (b *Batch) one(ctx context.Context, in *Input) *Outcome {
	o := &Outcome{Index: in.Index}
	res, err := b.RunOne(ctx, in)
	if err != nil {
		line := append([]byte(`{"id":`), in.ID...)
		msg, _ := json.Marshal(err.Error())
		o.Line = append(append(append(line, `,"error":`...), msg...), "}\n"...)
		o.Meta = Meta{Reason: "error", Code: engine.ExitFailed}
		return o
	}
	if res.CompletionReason == engine.Cancelled && ctx.Err() != nil {
		o.interrupted = true
		return o
	}
	o.Meta = Meta{Reason: res.CompletionReason, Code: res.ExitCode(), Usage: res.Usage}
	line, err := resultLine(in.ID, res)
	if err != nil {
		msg, _ := json.Marshal("writing the result: " + err.Error())
		line = append(append(append(append([]byte(`{"id":`), in.ID...), `,"error":`...), msg...), "}\n"...)
		o.Meta.Code, o.Meta.Reason = engine.ExitFailed, "error"
	}
	o.Line = line
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
func (b *Batch) showProgress(total int, c *counters, start time.Time) func() {
	w := b.Progress
	stop := make(chan struct{})
	done := make(chan struct{})
	draw := func() {
		fmt.Fprintf(w, "\r\x1b[Kbatch: %d/%d done (%d failed), %d running, %s", c.finished.Load(), total, c.failed.Load(), c.running.Load(),
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

// Summary writes the batch's summary (docs/cli.md#ensemble-batch).
func (s *Stats) Summary(w io.Writer, resume string) {
	head := fmt.Sprintf("batch of %s in %s: %d completed, %d failed", report.Count(s.Inputs, "input"),
		report.Seconds(s.Elapsed.Seconds()), s.Done-s.Failed, s.Failed)
	if s.Interrupted {
		head = fmt.Sprintf("batch of %s interrupted after %s: %d of %d done (%d failed), %s written", report.Count(s.Inputs, "input"),
			report.Seconds(s.Elapsed.Seconds()), s.Done, s.Inputs, s.Failed, report.Count(s.Written, "line"))
	}
	fmt.Fprintf(w, "ensemble: %s\n", head)
	if len(s.Reasons) > 0 {
		var parts []string
		for _, r := range slices.Sorted(maps.Keys(s.Reasons)) {
			part := fmt.Sprintf("%s %d", r, s.Reasons[r])
			if r == engine.Completed && s.CompletedFailing > 0 {
				part += fmt.Sprintf(" (%d with a failed execution)", s.CompletedFailing)
			}
			parts = append(parts, part)
		}
		fmt.Fprintf(w, "  by completion reason: %s\n", strings.Join(parts, ", "))
	}
	fmt.Fprintf(w, "  usage: %s\n", report.UsageText(s.Usage))
	for _, e := range s.Errs {
		fmt.Fprintf(w, "ensemble: %s\n", e)
	}
	if s.Interrupted && resume != "" {
		fmt.Fprintf(w, "ensemble: the rest goes on with: %s\n", resume)
	}
}

// DefaultConcurrency is how many runs of a batch go at once by default.
const DefaultConcurrency = 4
