package main

import (
	"fmt"
	"os"

	"github.com/ensemble-run/ensemble/engine"
	"github.com/ensemble-run/ensemble/ensemble"
	"github.com/ensemble-run/ensemble/events"
	"github.com/ensemble-run/ensemble/report"
)

// runView is what a person or a program sees of a run: the one event stream
// of the engine fans out to the text progress or the JSON lines on stdout,
// and to the recorder of the Markdown report; the summary and the report
// come at the end.
type runView struct {
	io       *stdio
	e        *ensemble.Ensemble
	output   string
	sink     events.Sink
	progress *report.Progress
	recorder *report.Recorder
	report   *os.File // --report, created before the run so that a bad path fails first
}

// newRunView wires the outputs for output ("text", "json" or "jsonl").
// With "text", a terminal gets the live status line, anything else plain
// lines.
func newRunView(io *stdio, e *ensemble.Ensemble, output string, stream bool, reportPath string) (*runView, error) {
	v := &runView{io: io, e: e, output: output}
	var sinks []events.Sink
	switch output {
	case "text":
		live := isTerminal(io.out)
		v.progress = report.NewProgress(io.out, report.ProgressOptions{
			Live:   live,
			Stream: stream,
			Width:  func() int { return termWidth(io.out) },
			// The status line would get in the way of a person answering.
			Pause: func(agent string) bool {
				a := e.Agent(agent)
				return a != nil && a.Kind == ensemble.KindAsk
			},
		})
		sinks = append(sinks, v.progress.Sink())
	case "jsonl":
		sinks = append(sinks, newJSONLines(io.out))
	}
	if reportPath != "" {
		fh, err := os.Create(reportPath)
		if err != nil {
			return nil, usageErr("--report: %v", err)
		}
		v.report = fh
		v.recorder = report.NewRecorder()
		sinks = append(sinks, v.recorder.Sink())
	}
	v.sink = events.Tee(sinks...)
	return v, nil
}

// start starts the live status line; the returned function stops it.
func (v *runView) start() (stop func()) {
	if v.progress == nil {
		return func() {}
	}
	return v.progress.Start()
}

// finish prints the summary (text) and writes the report. A report that
// cannot be written is reported on stderr and returned as a silent exit
// error.
func (v *runView) finish(res *engine.Result) error {
	if v.output == "text" {
		report.Summary(v.io.out, res, v.agentNames())
	}
	if v.report == nil {
		return nil
	}
	err := report.Markdown(v.report, res, report.MarkdownOptions{Ensemble: v.e, Events: v.recorder.Events()})
	if cerr := v.report.Close(); err == nil {
		err = cerr
	}
	v.report = nil
	if err != nil {
		fmt.Fprintf(v.io.err, "ensemble: writing the report: %v\n", err)
		return &exitError{code: engine.ExitFailed}
	}
	return nil
}

// close releases the report file when the run did not get to finish.
func (v *runView) close() {
	if v.report != nil {
		v.report.Close()
	}
}

func (v *runView) agentNames() []string {
	names := make([]string, len(v.e.Agents))
	for i, a := range v.e.Agents {
		names[i] = a.Name
	}
	return names
}

// termWidth is the width of the terminal f, or 80.
func termWidth(f any) int {
	if file, ok := f.(*os.File); ok {
		if w := terminalColumns(file); w > 0 {
			return w
		}
	}
	var cols int
	if _, err := fmt.Sscan(os.Getenv("COLUMNS"), &cols); err == nil && cols > 0 {
		return cols
	}
	return 80
}
