package bdd

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"

	"github.com/cucumber/godog"
	"github.com/cucumber/godog/colors"
	"github.com/cucumber/godog/formatters"

	"github.com/ensemble-run/ensemble/session"
)

// Exit codes of Run.
const (
	ExitPassed = 0 // every scenario passed
	ExitFailed = 1 // a scenario failed, or a step was undefined or pending
	ExitUsage  = 2 // bad paths, formats or feature files: nothing ran
)

// Formats are the report formats Run accepts.
// markdown is the pass rates as a Markdown table (with --baseline, their
// comparison), which makes a run one with repeats.
var Formats = []string{"pretty", "progress", "junit", "cucumber", "markdown"}

// RunOptions configure Run.
type RunOptions struct {
	Options
	// Paths are feature files or folders (searched recursively for
	// *.feature, skipping hidden folders, testdata, vendor and
	// node_modules). A file may end in :LINE to run the scenario at that
	// line. None: the current folder.
	Paths []string
	// Format is one format, or a comma-separated list of name[:FILE]
	// (godog's syntax): pretty (default), progress, junit, cucumber. A
	// format without a file writes to Output.
	Format string
	// Tags filters scenarios by tag expression (godog's: "@fast && ~@slow").
	Tags string
	// Output receives the reports without a file; nil means os.Stdout.
	Output io.Writer
	// Stderr receives notes about undefined steps; nil means os.Stderr.
	Stderr io.Writer
	// NoColors turns off ANSI colours.
	NoColors bool
	// Context is the parent of every scenario's run; nil means Background.
	Context context.Context
	// Export, unless a Tracer is given, exports the scenarios' spans
	// (test --otel): set up before the first runs, flushed after the
	// last (session.Export.Start).
	Export *session.Export
	// Sample, when > 0, runs that many rows, picked by Seed, of each
	// outline whose rows come from a file (@examples(file=…),
	// examplesfile.go); 0 runs them all.
	Sample int
	Seed   uint64
	// Repeats run each scenario several times, and judge its pass rate
	// (repeat.go). Without them, and without @repeat or @pass-rate tags,
	// every scenario runs once, one at a time.
	Repeats
	// State, when set, is a state database in which each scenario run is
	// saved as a run, under a test run of its own (saved.go): what the
	// inspector lists. $ENSEMBLE_STATE_SYNC (through LookupEnv) sets how
	// its turns reach the disk.
	State string

	// rowless are the outlines selected that have no Examples rows
	// (rowless.go): run warns of them.
	rowless []string
}

// UsageError is a problem found before any scenario ran.
type UsageError struct{ Msg string }

func (e *UsageError) Error() string { return e.Msg }

func usagef(format string, args ...any) error {
	return &UsageError{Msg: fmt.Sprintf(format, args...)}
}

// Run runs feature files with the built-in steps, every step strict, and
// returns the exit code: ExitPassed, ExitFailed, or ExitUsage with a
// *UsageError when nothing could run.
func Run(o RunOptions) (int, error) {
	if o.Export != nil && o.Tracer == nil {
		ctx := o.Context
		if ctx == nil {
			ctx = context.Background()
		}
		tracer, content, stop, err := o.Export.Start(ctx, o.LookupEnv)
		if err != nil {
			return ExitUsage, err
		}
		defer stop()
		o.Tracer, o.TraceContent = tracer, content
	}
	o.live = newLiveNames(o.Live)
	code, err := run(o)
	if code != ExitUsage {
		stderr := o.Stderr
		if stderr == nil {
			stderr = os.Stderr
		}
		o.live.report(stderr)
	}
	return code, err
}

func run(o RunOptions) (code int, err error) {
	out, stderr := o.Output, o.Stderr
	if out == nil {
		out = os.Stdout
	}
	if stderr == nil {
		stderr = os.Stderr
	}
	files, pl, err := prepare(&o)
	if err != nil {
		return ExitUsage, err
	}
	for _, w := range o.rowless {
		fmt.Fprintf(stderr, "warning: %s\n", w)
	}
	if o.State != "" {
		ts, err := openTestStore(o.State, files, pl, o.LookupEnv)
		if err != nil {
			return ExitUsage, err
		}
		o.saved = ts
		defer func() {
			c, ferr := ts.finish(o.Context, code, stderr)
			if err == nil {
				code, err = c, ferr
			}
		}()
	}
	if o.Repeats.active() || pl.tagged || hasFormat(o.Format, "markdown") {
		ctx := o.Context
		if ctx == nil {
			ctx = context.Background()
		}
		return runRepeated(ctx, &o, pl, out, stderr)
	}
	return runSuite(&o, files, pl, out, stderr)
}

// prepare checks the options and the feature files, and plans the
// scenarios: every error it returns is a usage error.
func prepare(o *RunOptions) ([]string, *plan, error) {
	if _, err := checkFormatNames(o.Format); err != nil {
		return nil, nil, err
	}
	if err := checkTags(o.Tags); err != nil {
		return nil, nil, err
	}
	files, err := FindFeatures(o.Paths)
	if err != nil {
		return nil, nil, err
	}
	if len(files) == 0 {
		return nil, nil, usagef("no .feature files found in %s (hidden folders, testdata, vendor and node_modules are not searched)", strings.Join(defaultPaths(o.Paths), ", "))
	}
	if err := checkReportFiles(o.Format, files, o.State); err != nil {
		return nil, nil, err
	}
	parsed, empty, err := checkSyntax(files)
	if err != nil {
		return nil, nil, err
	}
	if len(empty) == len(files) {
		return nil, nil, noScenarios(empty)
	}
	if err := o.Repeats.check(); err != nil {
		return nil, nil, err
	}
	repeat, need := max(o.Repeat, 1), 1.0
	if o.PassRate != nil {
		need = *o.PassRate
	}
	if o.Sample < 0 {
		return nil, nil, usagef("--sample must be at least 1, got %d", o.Sample)
	}
	var xmsgs []string
	for _, f := range parsed {
		x, msgs := expandExamples(f, o.Sample, o.Seed)
		f.x = x
		xmsgs = append(xmsgs, msgs...)
	}
	if len(xmsgs) > 0 {
		return nil, nil, usagef("%s", strings.Join(xmsgs, "\n"))
	}
	pl, err := planScenarios(parsed, o.Tags, repeat, need)
	if err != nil {
		return nil, nil, err
	}
	o.rowless = rowlessOutlines(parsed, o.Tags)
	if len(pl.scenarios) == 0 && len(o.rowless) > 0 {
		return nil, nil, usagef("no scenario to run:\n%s", strings.Join(o.rowless, "\n"))
	}
	return files, pl, nil
}

// runSuite runs the feature files once, through godog with a format of
// its own.
func runSuite(o *RunOptions, files []string, pl *plan, out, stderr io.Writer) (int, error) {
	format, err := checkFormat(o.Format)
	if err != nil {
		return ExitUsage, err
	}
	ctx := o.Context
	if ctx == nil {
		ctx = context.Background()
	}
	undefined := &undefinedSteps{}
	filtered := &snippetFilter{w: out}
	o.simSpend = &simSpend{}
	var started atomic.Int64
	suite := godog.TestSuite{
		Name: "ensemble",
		ScenarioInitializer: func(sc *godog.ScenarioContext) {
			started.Add(1)
			s := Register(sc, o.Options)
			sc.Before(func(c context.Context, _ *godog.Scenario) (context.Context, error) {
				if ctx.Err() != nil { // Ctrl-C: the scenarios left do not run
					return c, godog.ErrSkip
				}
				return c, nil
			})
			if o.saved != nil {
				o.saved.track(sc, s)
			}
			sc.StepContext().After(func(ctx context.Context, st *godog.Step, status godog.StepResultStatus, err error) (context.Context, error) {
				if status == godog.StepUndefined || errors.Is(err, godog.ErrUndefined) {
					undefined.add(st.Text, pl.stepPlaces(s.FeatureFile(), st.Text)...)
				}
				return ctx, nil
			})
		},
		Options: &godog.Options{
			Format:         format,
			Paths:          files,
			Tags:           o.Tags,
			Strict:         true,
			Output:         filtered,
			NoColors:       o.NoColors,
			DefaultContext: ctx,
			Concurrency:    1,
		},
	}
	status := suite.Run()
	filtered.flush()
	undefined.report(stderr)
	pl.reportEmpty(stderr)
	o.simSpend.report(stderr)
	if status == 0 && started.Load() == 0 {
		// The files have scenarios, so the tags selected none: a run
		// that tests nothing must not pass.
		if strings.TrimSpace(o.Tags) == "" {
			return ExitUsage, usagef("no scenario ran")
		}
		return ExitUsage, usagef("no scenario matches --tags %s", o.Tags)
	}
	if ctx.Err() != nil {
		fmt.Fprintln(stderr, "test: interrupted: the scenario under way was stopped, and the scenarios after it did not run")
		return ExitCancelled, nil
	}
	switch status {
	case 0:
		return ExitPassed, nil
	case 1:
		return ExitFailed, nil
	}
	return ExitUsage, usagef("godog could not run the features (exit %d)", status)
}

// hasFormat reports whether the --format value f names format name.
func hasFormat(f, name string) bool {
	parts, _ := checkFormatNames(f)
	for _, p := range parts {
		if n, _, _ := strings.Cut(p, ":"); n == name {
			return true
		}
	}
	return false
}

// checkFormatNames validates a --format value without touching files, and
// returns its parts.
func checkFormatNames(f string) ([]string, error) {
	if strings.TrimSpace(f) == "" {
		return []string{"pretty"}, nil
	}
	var parts []string
	for _, p := range strings.Split(f, ",") {
		p = strings.TrimSpace(p)
		name, file, hasFile := strings.Cut(p, ":")
		if !slices.Contains(Formats, name) {
			return nil, usagef("unknown format %q: use %s, or a comma-separated list of them, each optionally with :FILE", name, strings.Join(Formats, ", "))
		}
		if hasFile && file == "" {
			return nil, usagef("format %q: the file name after : is empty", name)
		}
		parts = append(parts, p)
	}
	return parts, nil
}

// fileFormatPrefix names the variants of godog's pretty and progress
// formats that bdd registers for report files: godog colours a file like
// the terminal and writes Go snippets and Go locations to it, noise to a
// user of `ensemble test`.
const fileFormatPrefix = "ensemble-file-"

var fileFormats = []string{"pretty", "progress"}

func init() {
	for _, name := range fileFormats {
		format := godog.FindFmt(name)
		godog.Format(fileFormatPrefix+name, "godog's "+name+" format for a report file: no colours, no Go code",
			func(suite string, out io.Writer) formatters.Formatter {
				// Each line is written once complete; godog's reports end
				// with a newline, so nothing is left in the filter.
				return format(suite, &snippetFilter{w: colors.Uncolored(out)})
			})
	}
}

// checkFormat validates a --format value, creates its report files, and
// returns it for godog.
func checkFormat(f string) (string, error) {
	formats, err := checkFormatNames(f)
	if err != nil {
		return "", err
	}
	var parts []string
	for _, p := range formats {
		name, file, hasFile := strings.Cut(p, ":")
		if hasFile {
			// godog creates the file; fail here, clearly, when it cannot.
			// Its folder is created: CI writes reports/x.xml in a fresh
			// checkout.
			if err := os.MkdirAll(filepath.Dir(file), 0o755); err != nil {
				return "", usagef("format %s: cannot create the report: %v", name, err)
			}
			fh, err := CreatePrivate(file)
			if err != nil {
				return "", usagef("format %s: cannot create the report: %v", name, err)
			}
			fh.Close()
			if slices.Contains(fileFormats, name) {
				name = fileFormatPrefix + name
			}
		}
		switch name {
		case "junit":
			name = junitFormat
		case "cucumber":
			name = cucumberFormat
		}
		if hasFile {
			parts = append(parts, name+":"+file)
		} else {
			parts = append(parts, name)
		}
	}
	return strings.Join(parts, ","), nil
}

// tagSyntax is the tag expression syntax of godog, which --tags uses.
const tagSyntax = "@smoke, ~@slow (not), @a && @b (and), @a,@b (or)"

// checkTags rejects tag expressions that godog would crash on (an empty
// tag) or read as one tag that no scenario has: Cucumber's newer syntax
// ("not @slow", "@a and @b", "@a or @b") would select nothing, and the run
// would pass.
func checkTags(expr string) error {
	if strings.TrimSpace(expr) == "" {
		return nil
	}
	for _, clause := range strings.Split(expr, "&&") {
		for _, tag := range strings.Split(clause, ",") {
			tag = strings.TrimSpace(tag)
			name := strings.TrimPrefix(strings.TrimPrefix(tag, "~"), "@")
			switch {
			case name == "":
				return usagef("--tags %q: an empty tag (around && or ,): write tag expressions as %s", expr, tagSyntax)
			case strings.ContainsAny(name, " \t\n()|!&@~"):
				return usagef("--tags %q: %q is not a tag: write tag expressions as %s", expr, tag, tagSyntax)
			}
		}
	}
	return nil
}
