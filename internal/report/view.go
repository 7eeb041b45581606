package report

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"github.com/ensemble-run/ensemble/agent"
	"github.com/ensemble-run/ensemble/engine"
	"github.com/ensemble-run/ensemble/ensemble"
	"github.com/ensemble-run/ensemble/events"
)

// ViewOptions say how a run is shown (ensemble run's --output, -q,
// --verbose, --stream, --report).
type ViewOptions struct {
	// Output is "text" (the progress, then the summary), "json" (nothing
	// while it runs: the caller prints the result) or "jsonl" (an event a
	// line).
	Output string
	// Out is where the progress, the events and the summary go; Err the
	// notices. Both are redacted by the caller.
	Out, Err io.Writer
	// Live redraws a status line (Out is a terminal); Width is its width
	// (0: unknown).
	Live  bool
	Width func() int
	// Stream shows the text of streamed replies as it comes.
	Stream bool
	// Quiet shows nothing but errors; Verbose adds the scripts' stderr
	// tails to the summary.
	Quiet, Verbose bool
	// Report is a Markdown report file to write when the run ends ("":
	// none), Redact what is written to it.
	Report string
	Redact func([]byte) []byte
}

// View is what a person or a program sees of a run: the run's one event
// stream fans out to the text progress or the JSON lines, and to the
// recorder of the Markdown report; the summary and the report come at
// the end (Finish).
type View struct {
	e        *ensemble.Ensemble
	o        ViewOptions
	sink     events.Sink
	progress *Progress
	recorder *Recorder
	report   *File
}

// NewView wires the outputs of a run of e. A report file that cannot be
// created is an error now, before the run.
func NewView(e *ensemble.Ensemble, o ViewOptions) (*View, error) {
	v := &View{e: e, o: o}
	var sinks []events.Sink
	switch {
	case o.Output == "text" && !o.Quiet:
		v.progress = NewProgress(o.Out, ProgressOptions{
			Live:   o.Live,
			Stream: o.Stream,
			Width:  o.Width,
			// The status line would get in the way of a person answering.
			Pause: func(name string) bool {
				a := e.Agent(name)
				return a != nil && agent.AsksHuman(a)
			},
		})
		sinks = append(sinks, v.progress.Sink())
	case o.Output == "jsonl":
		sinks = append(sinks, JSONLines(o.Out))
	}
	if o.Report != "" {
		if err := checkOverwrite(o.Report); err != nil {
			return nil, err
		}
		rf, err := CreateFile(o.Report)
		if err != nil {
			return nil, err
		}
		v.report, v.recorder = rf, NewRecorder()
		sinks = append(sinks, v.recorder.Sink())
	}
	v.sink = events.Tee(sinks...)
	return v, nil
}

// JSONLines writes one event per line to w.
func JSONLines(w io.Writer) events.Sink {
	enc := json.NewEncoder(w)
	var mu sync.Mutex
	return func(ev events.Event) {
		mu.Lock()
		defer mu.Unlock()
		_ = enc.Encode(ev)
	}
}

// Sink receives the run's events.
func (v *View) Sink() events.Sink { return v.sink }

// Start starts the live status line; the returned function stops it.
func (v *View) Start() (stop func()) {
	if v.progress == nil {
		return func() {}
	}
	return v.progress.Start()
}

// Finish prints the summary (text), with resume, the command that
// continues the run ("": none), and writes the report; err is the report's
// failure.
func (v *View) Finish(res *engine.Result, resume string) error {
	o := v.o
	if o.Output == "text" {
		names := make([]string, len(v.e.Agents))
		for i, a := range v.e.Agents {
			names[i] = a.Name
		}
		width := 0
		if o.Width != nil {
			width = o.Width()
		}
		Summary(o.Out, res, SummaryOptions{Agents: names, Width: width, Quiet: o.Quiet, Resume: resume, Output: v.e.Output})
		if o.Verbose && !o.Quiet {
			StderrTails(o.Out, res)
		}
		if !o.Quiet {
			fmt.Fprint(o.Err, PendingNotice(res, resume))
		}
	}
	if o.Quiet && o.Output == "text" {
		// -q prints only errors: each failed execution, one line each.
		for _, e := range res.Errors {
			fmt.Fprintf(TerminalWriter(o.Err), "ensemble: turn %d, %s: %s\n", e.TurnNumber, e.AgentName, e.Message)
		}
	}
	if v.report == nil {
		return nil
	}
	// Rendered whole, then redacted: no key is split between two writes.
	var md bytes.Buffer
	err := Markdown(&md, res, MarkdownOptions{Ensemble: v.e, Events: v.recorder.Events(), Resume: resume})
	if err == nil {
		b := md.Bytes()
		if o.Redact != nil {
			b = o.Redact(b)
		}
		_, err = v.report.Write(b)
	}
	err = v.report.Commit(err)
	v.report = nil
	return err
}

// Close drops the report when the run did not get to finish.
func (v *View) Close() {
	if v.report != nil {
		v.report.Discard()
	}
}

// PendingNotice says, after a run that ends waiting for input, what it
// waits for and how to answer (resume: the command that continues it).
func PendingNotice(res *engine.Result, resume string) string {
	var b strings.Builder
	for _, p := range res.PendingInput {
		fmt.Fprintf(&b, "ensemble: %s waits for an answer: %s\n", p.Agent, strings.Join(strings.Fields(p.Question), " "))
		if p.Deadline != nil {
			fmt.Fprintf(&b, "ensemble: %s waits until %s; then its on_timeout applies\n", p.Agent, p.Deadline.UTC().Format(time.RFC3339))
		}
	}
	if resume != "" && len(res.PendingInput) > 0 {
		// Every agent that waits: answering only some makes the run wait again.
		fmt.Fprintf(&b, "ensemble: answer with: %s", resume)
		for _, p := range res.PendingInput {
			fmt.Fprintf(&b, " --answer %s='...'", p.Agent)
		}
		b.WriteString("\n")
	}
	return TerminalSafe(b.String())
}
