package bdd

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	gherkin "github.com/cucumber/gherkin/go/v26"
	"github.com/cucumber/godog"
	"github.com/cucumber/godog/colors"
	"github.com/cucumber/godog/formatters"
	messages "github.com/cucumber/messages/go/v21"

	"github.com/ensemble-run/ensemble/ensemble"
	"github.com/ensemble-run/ensemble/internal/readcap"
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
	if _, err := checkFormatNames(o.Format); err != nil {
		return ExitUsage, err
	}
	if err := checkTags(o.Tags); err != nil {
		return ExitUsage, err
	}
	files, err := FindFeatures(o.Paths)
	if err != nil {
		return ExitUsage, err
	}
	if len(files) == 0 {
		return ExitUsage, usagef("no .feature files found in %s (hidden folders, testdata, vendor and node_modules are not searched)", strings.Join(defaultPaths(o.Paths), ", "))
	}
	parsed, empty, err := checkSyntax(files)
	if err != nil {
		return ExitUsage, err
	}
	if len(empty) == len(files) {
		return ExitUsage, noScenarios(empty)
	}
	if err := o.Repeats.check(); err != nil {
		return ExitUsage, err
	}
	repeat, need := max(o.Repeat, 1), 1.0
	if o.PassRate != nil {
		need = *o.PassRate
	}
	if o.Sample < 0 {
		return ExitUsage, usagef("--sample must be at least 1, got %d", o.Sample)
	}
	var xmsgs []string
	for _, f := range parsed {
		x, msgs := expandExamples(f, o.Sample, o.Seed)
		f.x = x
		xmsgs = append(xmsgs, msgs...)
	}
	if len(xmsgs) > 0 {
		return ExitUsage, usagef("%s", strings.Join(xmsgs, "\n"))
	}
	pl, err := planScenarios(parsed, o.Tags, repeat, need)
	if err != nil {
		return ExitUsage, err
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
			if o.saved != nil {
				o.saved.track(sc, s)
			}
			sc.StepContext().After(func(ctx context.Context, st *godog.Step, status godog.StepResultStatus, err error) (context.Context, error) {
				if status == godog.StepUndefined || errors.Is(err, godog.ErrUndefined) {
					undefined.add(st.Text)
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
	o.simSpend.report(stderr)
	if status == 0 && started.Load() == 0 {
		// The files have scenarios, so the tags selected none: a run
		// that tests nothing must not pass.
		return ExitUsage, usagef("no scenario matches --tags %s", o.Tags)
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
			fh, err := os.Create(file)
			if err != nil {
				return "", usagef("format %s: cannot create the report: %v", name, err)
			}
			fh.Close()
			if slices.Contains(fileFormats, name) {
				name = fileFormatPrefix + name
			}
		}
		if name == "junit" {
			name = junitFormat
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

func defaultPaths(paths []string) []string {
	if len(paths) > 0 {
		return paths
	}
	return []string{"."}
}

var lineSuffix = regexp.MustCompile(`:\d+$`)

// FindFeatures expands paths into feature files, in order: a folder gives
// its *.feature files, recursively and sorted, skipping hidden folders,
// testdata, vendor and node_modules below it; a
// file is taken as it is (with an optional :LINE). A path that does not
// exist is an error.
func FindFeatures(paths []string) ([]string, error) {
	var files []string
	seen := map[string]bool{}
	add := func(p string) {
		if !seen[p] {
			seen[p] = true
			files = append(files, p)
		}
	}
	for _, p := range defaultPaths(paths) {
		file := p
		if loc := lineSuffix.FindStringIndex(p); loc != nil {
			if _, err := os.Stat(p); err != nil {
				file = p[:loc[0]]
			}
		}
		fi, err := os.Stat(file)
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil, usagef("%s: no such file or folder", file)
			}
			return nil, usagef("%v", err)
		}
		if !fi.IsDir() {
			if !strings.HasSuffix(file, ".feature") {
				return nil, usagef("%s is not a .feature file: name feature files, or folders holding them", file)
			}
			add(p)
			continue
		}
		err = filepath.WalkDir(file, func(q string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if d.IsDir() {
				if q != file && ensemble.SkippedDir(d.Name()) {
					return filepath.SkipDir
				}
				return nil
			}
			if strings.HasSuffix(q, ".feature") {
				add(q)
			}
			return nil
		})
		if err != nil {
			return nil, usagef("searching %s: %v", file, err)
		}
	}
	return files, nil
}

// feature is a feature file given to Run, parsed once for the syntax
// check and the plan of a run with repeats.
type feature struct {
	arg  string // as given: the file, or file:LINE
	name string // the file
	doc  *messages.GherkinDocument
	x    *expansion // its outlines' rows from @examples files (examplesfile.go)
}

// checkSyntax parses every file, so that a Gherkin syntax error is reported
// clearly (godog would print it to the process's stderr), and returns the
// files parsed and those that have no scenario.
func checkSyntax(files []string) (parsed []*feature, empty []string, err error) {
	var msgs []string
	for _, f := range files {
		name := lineSuffix.ReplaceAllString(f, "")
		if _, err := os.Stat(f); err == nil {
			name = f
		}
		data, err := readcap.ReadFile(name, ensemble.MaxFileSize)
		if err != nil {
			msgs = append(msgs, fmt.Sprintf("%s: %v", name, err))
			continue
		}
		if line := longLine(data); line > 0 {
			msgs = append(msgs, fmt.Sprintf("%s:%d: the line is longer than %d bytes, which the Gherkin parser cannot read: put a long value in a doc string over several lines, or in a file", name, line, maxFeatureLine))
			continue
		}
		doc, err := gherkin.ParseGherkinDocument(bytes.NewReader(data), (&messages.Incrementing{}).NewId)
		if err == nil {
			parsed = append(parsed, &feature{arg: f, name: name, doc: doc})
			msgs = append(msgs, colonless(name, data, doc)...)
			if len(scenarioLines(doc)) == 0 {
				empty = append(empty, name)
			}
		}
		if err == nil && name != f {
			if msg := checkLine(doc, f); msg != "" {
				msgs = append(msgs, msg)
			}
		}
		if err != nil {
			for _, line := range strings.Split(err.Error(), "\n") {
				if line = strings.TrimSpace(line); line == "" || line == "Parser errors:" {
					continue
				}
				// "(3:5): expected: ..." → "file:3:5: expected: ..."; the
				// parser gives column 0 at the end of the file, where
				// columns here count from 1.
				if m := gherkinPos.FindStringSubmatch(line); m != nil {
					col := m[2]
					if col == "0" {
						col = "1"
					}
					line = fmt.Sprintf("%s:%s:%s: %s", name, m[1], col, m[3])
				} else {
					line = name + ": " + line
				}
				msgs = append(msgs, line)
			}
		}
	}
	if len(msgs) > 0 {
		return nil, nil, usagef("%s", strings.Join(msgs, "\n"))
	}
	return parsed, empty, nil
}

// noScenarios is the error of a run whose files have no scenario at all.
func noScenarios(files []string) error {
	msgs := make([]string, len(files))
	for i, f := range files {
		msgs[i] = f + " has no scenarios"
	}
	return usagef("%s: nothing to test", strings.Join(msgs, "\n"))
}

// scenarioKeyword matches a line that starts with a scenario keyword. With
// no colon after it, Gherkin reads the line as free text (a description),
// and the scenario it was meant to start silently does not exist.
var scenarioKeyword = regexp.MustCompile(`^(Scenario Outline|Scenario Template|Scenario)(\s|$)`)

// colonless finds the description lines of a parsed file that start with a
// scenario keyword but have no colon after it, and says where they are.
func colonless(name string, data []byte, doc *messages.GherkinDocument) []string {
	var descs []string
	if ft := doc.Feature; ft != nil {
		descs = append(descs, ft.Description)
		for _, c := range ft.Children {
			if c.Scenario != nil {
				descs = append(descs, c.Scenario.Description)
			}
			if c.Rule != nil {
				descs = append(descs, c.Rule.Description)
				for _, rc := range c.Rule.Children {
					if rc.Scenario != nil {
						descs = append(descs, rc.Scenario.Description)
					}
				}
			}
		}
	}
	var msgs []string
	lines := strings.Split(string(data), "\n")
	for _, d := range descs {
		for _, l := range strings.Split(d, "\n") {
			l = strings.TrimSpace(l)
			m := scenarioKeyword.FindStringSubmatch(l)
			if m == nil {
				continue
			}
			n := slices.IndexFunc(lines, func(s string) bool { return strings.TrimSpace(s) == l })
			msgs = append(msgs, fmt.Sprintf("%s:%d: '%s' needs a colon: %s", name, n+1, m[1], l))
		}
	}
	return msgs
}

// checkLine checks that the line of "file:LINE" is where a scenario (or a
// scenario outline) starts: godog runs only such a scenario, and for any
// other line nothing would run and the run would pass.
func checkLine(doc *messages.GherkinDocument, fileLine string) string {
	_, suffix := splitLine(fileLine)
	line, err := strconv.ParseInt(strings.TrimPrefix(suffix, ":"), 10, 64)
	if err != nil {
		return ""
	}
	var starts []string
	for _, l := range scenarioLines(doc) {
		if l == line {
			return ""
		}
		starts = append(starts, strconv.FormatInt(l, 10))
	}
	if len(starts) == 0 {
		return fmt.Sprintf("%s: no scenario starts at line %d: the file has no scenarios", fileLine, line)
	}
	return fmt.Sprintf("%s: no scenario starts at line %d (scenarios start at lines %s)", fileLine, line, strings.Join(starts, ", "))
}

// scenarioLines returns the lines where the scenarios (and scenario
// outlines) of a parsed file start.
func scenarioLines(doc *messages.GherkinDocument) []int64 {
	var lines []int64
	see := func(sc *messages.Scenario) {
		if sc != nil {
			lines = append(lines, sc.Location.Line)
		}
	}
	if doc.Feature != nil {
		for _, c := range doc.Feature.Children {
			see(c.Scenario)
			if c.Rule != nil {
				for _, rc := range c.Rule.Children {
					see(rc.Scenario)
				}
			}
		}
	}
	return lines
}

var gherkinPos = regexp.MustCompile(`^\((\d+):(\d+)\): (.*)$`)

// snippetFilter drops godog's Go snippets for undefined steps (the last
// part of its summary): a user of `ensemble test` cannot add Go steps.
type snippetFilter struct {
	w       io.Writer
	buf     []byte
	dropped bool
}

// goLocation matches the Go location of a step definition that godog's
// pretty format prints after each step ("# scenario.go:97 -> *Scenario",
// maybe coloured), with the padding before it: noise to a user.
var goLocation = regexp.MustCompile(`[ \t]*(?:\x1b\[[0-9;]*m)?# [^ \n]+\.go:\d+ -> [^ \n\x1b]+(?:\x1b\[[0-9;]*m)?[ \t]*(\r?\n)$`)

const snippetHeader = "You can implement step definitions for undefined steps"

func (f *snippetFilter) Write(p []byte) (int, error) {
	if f.dropped {
		return len(p), nil
	}
	f.buf = append(f.buf, p...)
	for {
		i := bytes.IndexByte(f.buf, '\n')
		if i < 0 {
			break
		}
		line := f.buf[:i+1]
		if bytes.Contains(line, []byte(snippetHeader)) {
			f.dropped, f.buf = true, nil
			return len(p), nil
		}
		line = goLocation.ReplaceAll(line, []byte("$1"))
		if _, err := f.w.Write(line); err != nil {
			return len(p), err
		}
		f.buf = f.buf[i+1:]
	}
	return len(p), nil
}

func (f *snippetFilter) flush() {
	if !f.dropped && len(f.buf) > 0 {
		_, _ = f.w.Write(f.buf)
	}
	f.buf = nil
}

// undefinedSteps collects the text of undefined steps.
type undefinedSteps struct {
	mu    sync.Mutex
	steps []string
}

func (u *undefinedSteps) add(text string) {
	u.mu.Lock()
	defer u.mu.Unlock()
	if !slices.Contains(u.steps, text) {
		u.steps = append(u.steps, text)
	}
}

func (u *undefinedSteps) report(w io.Writer) {
	u.mu.Lock()
	defer u.mu.Unlock()
	if len(u.steps) == 0 {
		return
	}
	bw := bufio.NewWriter(w)
	fmt.Fprintf(bw, "\n%d undefined step(s): they are not built-in steps of the test command (list them with `test --list-steps`):\n", len(u.steps))
	for _, st := range u.steps {
		fmt.Fprintf(bw, "  %s\n", st)
		if hint := Suggest(st); hint != "" {
			fmt.Fprintf(bw, "    did you mean: %s\n", hint)
		}
	}
	bw.Flush()
}

var (
	quotedArg = regexp.MustCompile(`"[^"]*"`)
	numberArg = regexp.MustCompile(`\b\d+\b`)
)

// shape reduces a step to its words: arguments and keywords removed.
func shape(step string) string {
	step = strings.TrimSpace(step)
	for _, kw := range []string{"Given ", "When ", "Then ", "And ", "But ", "* "} {
		step = strings.TrimPrefix(step, kw)
	}
	step = quotedArg.ReplaceAllString(step, `""`)
	step = numberArg.ReplaceAllString(step, "N")
	return strings.ToLower(step)
}

// Suggest returns the built-in step closest to an undefined one, or "" when
// none is close.
func Suggest(step string) string {
	s := shape(step)
	best, bestD := "", len(s)/3+2
	for _, d := range stepDefs {
		if dist := levenshtein(s, shape(d.Example)); dist < bestD {
			best, bestD = d.Example, dist
		}
	}
	return best
}

func levenshtein(a, b string) int {
	ar, br := []rune(a), []rune(b)
	prev := make([]int, len(br)+1)
	cur := make([]int, len(br)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(ar); i++ {
		cur[0] = i
		for j := 1; j <= len(br); j++ {
			cost := 1
			if ar[i-1] == br[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(br)]
}

// ListSteps writes the built-in steps, one per line, grouped by keyword.
func ListSteps(w io.Writer) {
	last := ""
	for _, d := range Steps() {
		if d.Keyword != last {
			if last != "" {
				fmt.Fprintln(w)
			}
			last = d.Keyword
		}
		fmt.Fprintf(w, "%s\n    %s\n", d.Example, d.Doc)
	}
}
