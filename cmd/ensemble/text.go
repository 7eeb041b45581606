package main

import (
	"bytes"
	"fmt"
	"os"
	"strings"

	"github.com/ensemble-run/ensemble/agent"
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
	flags    *runFlags
	sink     events.Sink
	progress *report.Progress
	recorder *report.Recorder
	report   *report.File // --report
	// resume is the command that continues the run, once it is saved ("":
	// from flags.stateFile).
	resume string
}

// newRunView wires the outputs for output ("text", "json" or "jsonl").
// With "text", a terminal gets the live status line, anything else plain
// lines.
func newRunView(io *stdio, e *ensemble.Ensemble, output string, f *runFlags) (*runView, error) {
	v := &runView{io: io, e: e, output: output, flags: f}
	stream, reportPath := f.stream, f.report
	var sinks []events.Sink
	switch {
	case output == "text" && !f.quiet:
		live := isTerminal(io.out)
		v.progress = report.NewProgress(io.stdout(), report.ProgressOptions{
			Live:   live,
			Stream: stream,
			Width:  io.termWidth,
			// The status line would get in the way of a person answering.
			Pause: func(name string) bool {
				a := e.Agent(name)
				return a != nil && agent.AsksHuman(a)
			},
		})
		sinks = append(sinks, v.progress.Sink())
	case output == "jsonl":
		sinks = append(sinks, newJSONLines(io.stdout()))
	}
	if reportPath != "" {
		rf, err := report.CreateFile(reportPath)
		if err != nil {
			return nil, usageErr("--report %s: %v", reportPath, err)
		}
		v.report = rf
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
		opts := report.SummaryOptions{Agents: v.agentNames(), Width: v.io.termWidth(), Quiet: v.flags.quiet}
		switch {
		case v.resume != "":
			opts.Resume = v.resume
		case v.flags.stateFile != "":
			opts.Resume = v.io.resumeCommand(v.flags.stateFile)
		}
		report.Summary(v.io.stdout(), res, opts)
		if v.flags.verbose && !v.flags.quiet {
			report.StderrTails(v.io.stdout(), res)
		}
		if !v.flags.quiet {
			fmt.Fprint(v.io.stderr(), pendingNotice(res, opts.Resume))
		}
	}
	if v.flags.quiet && v.output == "text" {
		// -q prints only errors: each failed execution, one line each.
		for _, e := range res.Errors {
			fmt.Fprintf(v.io.stderr(), "ensemble: turn %d, %s: %s\n", e.TurnNumber, e.AgentName, e.Message)
		}
	}
	if v.report == nil {
		return nil
	}
	// Rendered whole, then redacted: no key is split between two writes.
	var md bytes.Buffer
	err := report.Markdown(&md, res, report.MarkdownOptions{Ensemble: v.e, Events: v.recorder.Events()})
	if err == nil {
		_, err = v.report.Write(v.io.secrets.Bytes(md.Bytes()))
	}
	err = v.report.Commit(err)
	v.report = nil
	if err != nil {
		fmt.Fprintf(v.io.stderr(), "ensemble: writing the report %s: %v\n", v.flags.report, err)
		return &exitError{code: engine.ExitFailed}
	}
	return nil
}

// close drops the report when the run did not get to finish.
func (v *runView) close() {
	if v.report != nil {
		v.report.Discard()
	}
}

func (v *runView) agentNames() []string {
	names := make([]string, len(v.e.Agents))
	for i, a := range v.e.Agents {
		names[i] = a.Name
	}
	return names
}

// termWidth is the width of the terminal on stdout, else $COLUMNS (read
// through the injected environment, like every other variable), else 0:
// unknown.
func (s *stdio) termWidth() int {
	if file, ok := s.out.(*os.File); ok {
		if w := terminalColumns(file); w > 0 {
			return w
		}
	}
	var cols int
	if v, ok := s.lookupEnv("COLUMNS"); ok {
		if _, err := fmt.Sscan(v, &cols); err == nil && cols > 0 {
			return cols
		}
	}
	return 0
}

// resumeCommand is the command that continues the run saved in the state
// file at path, quoted for a POSIX shell when it needs to be.
func (s *stdio) resumeCommand(path string) string {
	return s.program() + " resume " + shellQuote(path)
}

// shellQuote returns s as one word of a POSIX shell.
func shellQuote(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-./+,:@%=") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
