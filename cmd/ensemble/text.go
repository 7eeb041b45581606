package main

import (
	"fmt"
	"os"

	"golang.org/x/term"

	"github.com/ensemble-run/ensemble/engine"
	"github.com/ensemble-run/ensemble/ensemble"
	"github.com/ensemble-run/ensemble/internal/batch"
	"github.com/ensemble-run/ensemble/internal/report"
	"github.com/ensemble-run/ensemble/internal/shell"
)

// newRunView is the view of a run of e for the flags (report.View), on
// stdout and stderr, redacted.
func newRunView(io *stdio, e *ensemble.Ensemble, output string, f *runFlags) (*report.View, error) {
	if err := f.checkReport(e); err != nil { // resume's
		return nil, err
	}
	v, err := report.NewView(e, report.ViewOptions{Output: output, Out: io.stdout(), Err: io.stderr(), Live: isTerminal(io.out),
		Width: io.termWidth, Stream: f.stream, Quiet: f.quiet, Verbose: f.verbose, Report: f.report, Redact: io.secrets.Bytes})
	if err != nil {
		return nil, usageErr("--report %s: %v", f.report, err)
	}
	return v, nil
}

// checkReport refuses a --report that is a file the run reads or writes
// (the ensemble, the responses, a profiles file, the input, the state), by
// any path to it: the report would replace it when the run ends.
func (f *runFlags) checkReport(e *ensemble.Ensemble) error {
	if f.report == "" {
		return nil
	}
	files := []batch.File{{What: "the ensemble file", Path: e.Path}, {What: "the --responses file", Path: f.responses},
		{What: "the --input-file file", Path: f.inputFile}, {What: "the state file", Path: f.stateFile}}
	for _, p := range f.profiles {
		files = append(files, batch.File{What: "a --profiles file", Path: p})
	}
	if same, ok := batch.SameFile(f.report, files); ok {
		return usageErr("--report %s is %s: the report would overwrite it; give it a file of its own", f.report, same.What)
	}
	return nil
}

// finishView prints the summary and writes the report; a report that
// cannot be written is reported on stderr and returned as a silent exit
// error.
func finishView(io *stdio, v *report.View, f *runFlags, res *engine.Result, resume string) error {
	if resume == "" && f.stateFile != "" {
		resume = io.resumeCommand(f.stateFile)
	}
	if err := v.Finish(res, resume); err != nil {
		fmt.Fprintf(io.stderr(), "ensemble: writing the report %s: %v\n", f.report, err)
		return &exitError{code: engine.ExitFailed}
	}
	return nil
}

// termWidth is the width of the terminal on stdout, else $COLUMNS (read
// through the injected environment, like every other variable), else 0:
// unknown.
func (s *stdio) termWidth() int {
	if file, ok := s.out.(*os.File); ok {
		if w, _, err := term.GetSize(int(file.Fd())); err == nil && w > 0 {
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

// shellQuote returns s as one word of a POSIX shell (shell.Quote).
func shellQuote(s string) string { return shell.Quote(s) }
