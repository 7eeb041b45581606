package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/ensemble-run/ensemble/engine"
	"github.com/ensemble-run/ensemble/ensemble"
	"github.com/ensemble-run/ensemble/internal/secrets"
)

// stdio is the command's standard streams; tests inject buffers.
type stdio struct {
	in  io.Reader
	out io.Writer
	err io.Writer
	// getenv reads the environment; nil means os.LookupEnv.
	getenv func(string) (string, bool)
	// errTTY treats stderr as a terminal, whatever it is; inTTY stdin.
	errTTY bool
	inTTY  bool
	// secrets are the keys of the loaded ensemble's profiles, redacted
	// from everything written (see stdout); set by load.
	secrets *secrets.Redactor
	// prog is how the user runs this binary, in the commands it suggests
	// (see programName); "" is "ensemble".
	prog string
	// opener starts a program without waiting for it (ui --open starts
	// the browser with it); nil starts it for real.
	opener func(name string, args ...string) error
}

// program is the command that runs this binary, for the commands the
// messages suggest.
func (s *stdio) program() string {
	if s.prog == "" {
		return "ensemble"
	}
	return s.prog
}

// stdout is out with every key redacted: results, events, progress,
// summaries and graphs are written through it.
func (s *stdio) stdout() io.Writer { return s.secrets.Writer(s.out) }

// stderr is err with every key redacted.
func (s *stdio) stderr() io.Writer { return s.secrets.Writer(s.err) }

// errIsTerminal reports whether stderr is a terminal (tests may say so).
func (s *stdio) errIsTerminal() bool {
	if s.errTTY {
		return true
	}
	return isTerminal(s.err)
}

func (s *stdio) lookupEnv(k string) (string, bool) {
	if s.getenv != nil {
		return s.getenv(k)
	}
	return os.LookupEnv(k)
}

// isTerminal reports whether f is a terminal (not merely a character
// device, as /dev/null is).
func isTerminal(f any) bool {
	file, ok := f.(*os.File)
	return ok && term.IsTerminal(int(file.Fd()))
}

// exitError carries an exit code with an error to print (nil: print nothing).
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string {
	if e.err == nil {
		return fmt.Sprintf("exit %d", e.code)
	}
	return e.err.Error()
}
func (e *exitError) Unwrap() error { return e.err }

// ExitCode is the one interface the exit code is read through.
func (e *exitError) ExitCode() int { return e.code }

type exitCoder interface{ ExitCode() int }

// usageErr is bad command-line usage: exit 2 (docs/semantics.md#end-of-a-run-and-exit-codes).
func usageErr(format string, args ...any) error {
	return &exitError{code: engine.ExitUsage, err: fmt.Errorf(format, args...)}
}

// run is the whole command: it parses args, runs, and returns the exit code.
func run(ctx context.Context, args []string, io *stdio) int {
	root := newRootCmd(io)
	root.SetArgs(args)
	err := root.ExecuteContext(ctx)
	if err == nil {
		return 0
	}
	var ec exitCoder
	code := engine.ExitUsage // cobra's own errors are usage errors
	if errors.As(err, &ec) {
		code = ec.ExitCode()
	}
	var ee *exitError
	if !errors.As(err, &ee) || ee.err != nil {
		io.printError(err)
	}
	return code
}

// printError writes err to stderr. A list of load problems is printed as
// it is, one FILE:LINE:COL: message a line, and on a terminal with the
// offending source line and a caret under each.
func (s *stdio) printError(err error) {
	err = s.secrets.Error(err)
	var list *ensemble.ErrorList
	if errors.As(err, &list) && err.Error() == list.Error() {
		if s.errIsTerminal() {
			fmt.Fprintln(s.err, list.Pretty())
		} else {
			fmt.Fprintln(s.err, list)
		}
		return
	}
	fmt.Fprintf(s.err, "ensemble: %v\n", err)
}

// printWarning prints a load warning as FILE:LINE:COL: warning: ..., with
// the line and a caret under the column on a terminal, as errors are.
func (s *stdio) printWarning(w *ensemble.Error) {
	ww := *w
	ww.Message = "warning: " + w.Message
	if s.errIsTerminal() {
		fmt.Fprintln(s.err, ww.Pretty())
		return
	}
	fmt.Fprintln(s.err, ww.Error())
}

func newRootCmd(io *stdio) *cobra.Command {
	root := &cobra.Command{
		Use:           "ensemble",
		Short:         "Run multi-agent LLM workflows declared in YAML",
		Version:       version(),
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	io.group(root)
	root.SetUsageTemplate(usageTemplate)
	root.SetIn(io.in)
	root.SetOut(io.out)
	root.SetErr(io.err)
	root.SetFlagErrorFunc(io.flagError)
	// An id flag given empty (--run-id "$ID" with ID unset, say) is a
	// mistake, not a request for the default, which leaving the flag out
	// asks for.
	root.PersistentPreRunE = func(c *cobra.Command, _ []string) error {
		for _, name := range []string{"run-id", "batch-id"} {
			if f := c.Flags().Lookup(name); f != nil && f.Changed && f.Value.String() == "" {
				return usageErr("--%s is empty: give an id, or leave the flag out for its default", name)
			}
		}
		return nil
	}
	root.AddCommand(newRunCmd(io), newValidateCmd(io), newResumeCmd(io), newTestCmd(io), newGraphCmd(io), newSchemaCmd(io))
	root.AddCommand(newInitCmd(io), newStateCmd(io), newBatchCmd(io), newMCPCmd(io), newImportCmd(io), newUICmd(io))
	root.AddCommand(newWorkerCmd(io), newAnswerCmd(io)) // the Temporal engine (temporal.go)
	root.AddCommand(newVersionCmd(io), newServeCmd(io))
	addCompletions(root)
	root.InitDefaultCompletionCmd()
	if c, _, err := root.Find([]string{"completion"}); err == nil && c != root {
		io.group(c) // completion tcsh is a usage error, not its help and exit 0
	}
	addExamples(root, "")
	return root
}
