package main

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
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
	report   *reportFile // --report
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
		rf, err := createReport(reportPath)
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
			writeStderrTails(v.io.stdout(), res)
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
		_, err = v.report.tmp.Write(v.io.secrets.Bytes(md.Bytes()))
	}
	err = v.report.commit(err)
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
		v.report.discard()
	}
}

// reportFile is the --report file, written atomically: the report goes to a
// temporary file beside it, created before the run so that a bad path fails
// at once (exit 2), and renamed over the path when the run ends. Until then
// nothing is written at the path: a run that is refused (resume of a changed
// ensemble) or killed leaves an earlier report there as it was.
type reportFile struct {
	path string
	tmp  *os.File
}

// The report is created with mode 0600, as the state file is: it holds the
// same conversations. Errors name path, not the temporary file.
func createReport(path string) (*reportFile, error) {
	if fi, err := os.Stat(path); err == nil && fi.IsDir() {
		return nil, errors.New("it is a directory")
	}
	dir, base := filepath.Split(path)
	if dir == "" {
		dir = "."
	}
	tmp, err := os.CreateTemp(dir, "."+base+".tmp-*")
	if err != nil {
		return nil, fmt.Errorf("cannot create it: %w", pathless(err))
	}
	return &reportFile{path: path, tmp: tmp}, nil
}

// pathless is err without the path of an *os.PathError or *os.LinkError.
func pathless(err error) error {
	var pe *os.PathError
	var le *os.LinkError
	switch {
	case errors.As(err, &pe):
		return pe.Err
	case errors.As(err, &le):
		return le.Err
	}
	return err
}

// commit puts the written report in place; err is the error of writing it.
func (r *reportFile) commit(err error) error {
	if cerr := r.tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(r.tmp.Name(), r.path)
	}
	if err != nil {
		os.Remove(r.tmp.Name())
		return pathless(err)
	}
	return nil
}

func (r *reportFile) discard() {
	r.tmp.Close()
	os.Remove(r.tmp.Name())
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
