package main

import (
	"bytes"
	"encoding/json"
	"encoding/xml"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/ensemble-run/ensemble/internal/bdd"
)

const gherkinDir = "testdata/gherkin/"

// junitReport is the part of the JUnit report the tests read.
type junitReport struct {
	XMLName  xml.Name `xml:"testsuites"`
	Tests    int      `xml:"tests,attr"`
	Failures int      `xml:"failures,attr"`
	Suites   []struct {
		Name  string `xml:"name,attr"`
		Cases []struct {
			Name      string `xml:"name,attr"`
			Classname string `xml:"classname,attr"`
			Failure   *struct {
				Message string `xml:"message,attr"`
			} `xml:"failure"`
		} `xml:"testcase"`
	} `xml:"testsuite"`
}

func parseJUnit(t *testing.T, data string) junitReport {
	t.Helper()
	var r junitReport
	if err := xml.Unmarshal([]byte(data), &r); err != nil {
		t.Fatalf("the junit report is not XML: %v\n%s", err, data)
	}
	return r
}

func TestTestPasses(t *testing.T) {
	t.Parallel()
	o := ensembleCmd(t, "", "test", gherkinDir+"pass")
	if o.code != 0 {
		t.Fatalf("exit %d, want 0\nstdout:\n%s\nstderr:\n%s", o.code, o.stdout, o.stderr)
	}
	if !strings.Contains(o.stdout, "2 scenarios (2 passed)") {
		t.Errorf("the pretty report does not say both scenarios passed:\n%s", o.stdout)
	}
	if strings.Contains(o.stdout, ".go:") {
		t.Errorf("the pretty report shows Go locations of step definitions:\n%s", o.stdout)
	}
	if strings.Contains(o.stdout, "\x1b[") {
		t.Errorf("colours on a stdout that is not a terminal:\n%q", o.stdout)
	}
}

func TestTestExamplePasses(t *testing.T) {
	t.Parallel()
	o := ensembleCmd(t, "", "test", "--format", "progress", "../../examples/iterative-analysis")
	if o.code != 0 {
		t.Fatalf("exit %d, want 0\nstdout:\n%s\nstderr:\n%s", o.code, o.stdout, o.stderr)
	}
}

func TestTestFailureShowsExpectedAndActual(t *testing.T) {
	t.Parallel()
	o := ensembleCmd(t, "", "test", gherkinDir+"fail/fail.feature")
	if o.code != 1 {
		t.Fatalf("exit %d, want 1\nstdout:\n%s\nstderr:\n%s", o.code, o.stdout, o.stderr)
	}
	want := `agents ran in order "greeter, critic, signoff", want "greeter, signoff, critic"`
	if !strings.Contains(o.stdout, want) {
		t.Errorf("the report lacks %q:\n%s", want, o.stdout)
	}
}

func TestTestUndefinedStepFails(t *testing.T) {
	t.Parallel()
	o := ensembleCmd(t, "", "test", gherkinDir+"undefined")
	if o.code != 1 {
		t.Fatalf("exit %d, want 1 for an undefined step\nstdout:\n%s\nstderr:\n%s", o.code, o.stdout, o.stderr)
	}
	if strings.Contains(o.stdout, "func ") || strings.Contains(o.stdout, "snippets") {
		t.Errorf("the report suggests Go code to a user of ensemble test:\n%s", o.stdout)
	}
	for _, want := range []string{"1 undefined step(s)", "the ensemble run (" + gherkinDir + "undefined/undefined.feature:5)", "did you mean: When the ensemble runs"} {
		if !strings.Contains(o.stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, o.stderr)
		}
	}
}

func TestTestJUnitIsXML(t *testing.T) {
	t.Parallel()
	o := ensembleCmd(t, "", "test", "--format", "junit", gherkinDir+"pass", gherkinDir+"fail")
	if o.code != 1 {
		t.Fatalf("exit %d, want 1\nstderr:\n%s", o.code, o.stderr)
	}
	r := parseJUnit(t, o.stdout)
	if r.Tests != 3 || r.Failures != 1 || len(r.Suites) != 2 {
		t.Fatalf("junit: %d tests, %d failures, %d suites; want 3, 1, 2\n%s", r.Tests, r.Failures, len(r.Suites), o.stdout)
	}
	var msg string
	for _, s := range r.Suites {
		for _, c := range s.Cases {
			if c.Failure != nil {
				msg = c.Failure.Message
			}
		}
	}
	if !strings.Contains(msg, `agents ran in order "greeter, critic, signoff", want "greeter, signoff, critic"`) {
		t.Errorf("the failure's message does not say what was expected:\n%s", o.stdout)
	}
}

func TestTestCucumberIsJSON(t *testing.T) {
	t.Parallel()
	o := ensembleCmd(t, "", "test", "--format", "cucumber", gherkinDir+"pass")
	if o.code != 0 {
		t.Fatalf("exit %d\nstderr:\n%s", o.code, o.stderr)
	}
	var features []map[string]any
	if err := json.Unmarshal([]byte(o.stdout), &features); err != nil || len(features) != 1 {
		t.Fatalf("the cucumber report is not a JSON list of 1 feature (%v):\n%s", err, o.stdout)
	}
}

func TestTestOutFileAndMultipleFormats(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	report := filepath.Join(dir, "report.xml")
	o := ensembleCmd(t, "", "test", "--format", "progress,junit:"+report, gherkinDir+"pass")
	if o.code != 0 {
		t.Fatalf("exit %d\nstderr:\n%s", o.code, o.stderr)
	}
	data, err := os.ReadFile(report)
	if err != nil {
		t.Fatal(err)
	}
	if r := parseJUnit(t, string(data)); r.Tests != 2 {
		t.Errorf("report.xml has %d tests, want 2", r.Tests)
	}
	if !strings.Contains(o.stdout, "2 scenarios (2 passed)") {
		t.Errorf("stdout lacks the progress summary:\n%s", o.stdout)
	}

	out := filepath.Join(dir, "reports", "out.xml") // the folder is created
	o = ensembleCmd(t, "", "test", "--format", "junit", "--out", out, gherkinDir+"pass")
	if o.code != 0 || o.stdout != "" {
		t.Fatalf("exit %d, stdout %q; want 0 and nothing on stdout", o.code, o.stdout)
	}
	data, err = os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	parseJUnit(t, string(data))
}

func TestTestTagsFilter(t *testing.T) {
	t.Parallel()
	o := ensembleCmd(t, "", "test", "--format", "junit", "--tags", "@smoke", gherkinDir+"pass")
	if o.code != 0 {
		t.Fatalf("exit %d\nstderr:\n%s", o.code, o.stderr)
	}
	r := parseJUnit(t, o.stdout)
	if r.Tests != 1 || r.Suites[0].Cases[0].Name != "An approved greeting is signed off" {
		t.Errorf("--tags @smoke ran %d scenarios, want only the tagged one:\n%s", r.Tests, o.stdout)
	}
	o = ensembleCmd(t, "", "test", "--format", "junit", "--tags", "~@smoke", gherkinDir+"pass")
	if r := parseJUnit(t, o.stdout); r.Tests != 1 || r.Suites[0].Cases[0].Name != "A rejected greeting is not" {
		t.Errorf("--tags ~@smoke ran %d scenarios, want only the untagged one:\n%s", r.Tests, o.stdout)
	}
}

// Bad input fails the scenario it is in, with a clear message, and the
// others still run.
func TestTestBadInputIsIsolated(t *testing.T) {
	t.Parallel()
	o := ensembleCmd(t, "", "test", "--format", "junit", gherkinDir+"badinput")
	if o.code != 1 {
		t.Fatalf("exit %d, want 1\nstderr:\n%s", o.code, o.stderr)
	}
	r := parseJUnit(t, o.stdout)
	want := map[string]string{
		"A missing ensemble":     `the ensemble "../missing.yaml" does not exist`,
		"An unknown agent":       `the ensemble "greeting" has no agent "critick" (its agents: greeter, critic, signoff)`,
		"A malformed doc string": `agent "critic" responds: the doc string is not valid JSON`,
		"An invalid expression":  `the expression "context.critic.approved ===" is invalid`,
		"A good one among them":  "",
	}
	if len(r.Suites) != 1 || len(r.Suites[0].Cases) != len(want) {
		t.Fatalf("want %d scenarios in one feature:\n%s", len(want), o.stdout)
	}
	for _, c := range r.Suites[0].Cases {
		msg, ok := want[c.Name]
		switch {
		case !ok:
			t.Errorf("unexpected scenario %q", c.Name)
		case msg == "" && c.Failure != nil:
			t.Errorf("%q: failure %+v, want none", c.Name, c.Failure)
		case msg != "" && (c.Failure == nil || !strings.Contains(c.Failure.Message, msg)):
			t.Errorf("%q: failure %+v, want a message containing %q", c.Name, c.Failure, msg)
		}
	}
}

func TestTestUsageErrors(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"missing path", []string{"test", gherkinDir + "nowhere"}, "nowhere: no such file or folder"},
		{"unknown format", []string{"test", "--format", "html", gherkinDir + "pass"}, `unknown format "html"`},
		{"syntax error", []string{"test", gherkinDir + "syntax"}, "broken.feature:5:3: expected:"},
		// The parser's column 0 at the end of the file is column 1.
		{"unclosed doc string", []string{"test", gherkinDir + "unclosed"}, "unclosed.feature:6:1: unexpected end of file"},
		{"no features", []string{"test", gherkinDir + "scripts"}, "no .feature files found"},
		// Testing nothing never passes.
		{"tags match nothing", []string{"test", "--tags", "@nothing", gherkinDir + "pass"}, "no scenario matches --tags @nothing"},
		{"scenario without colon", []string{"test", gherkinDir + "nocolon"}, "nocolon.feature:4: 'Scenario' needs a colon"},
		{"misspelt keyword in text", []string{"test", gherkinDir + "misspelt"}, "misspelt.feature:4: 'Backgroud:' is not a Gherkin keyword (did you mean 'Background:'?)"},
		{"misspelt keyword", []string{"test", gherkinDir + "misspeltsyntax"}, `misspelt.feature:7:3: expected: `},
		{"misspelt keyword hint", []string{"test", gherkinDir + "misspeltsyntax"}, `got '  Scenaro: The greeting runs again' (did you mean "Scenario:"?)`},
		{"no scenarios", []string{"test", gherkinDir + "empty"}, "empty.feature has no scenarios"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			o := ensembleCmd(t, "", tc.args...)
			if o.code != 2 {
				t.Errorf("exit %d, want 2\nstdout:\n%s\nstderr:\n%s", o.code, o.stdout, o.stderr)
			}
			if !strings.Contains(o.stderr, tc.want) {
				t.Errorf("stderr lacks %q:\n%s", tc.want, o.stderr)
			}
		})
	}
}

// --list-steps prints the step library's own list, and only that; it
// points to the project's own documents, never to outside ones.
func TestTestListStepsPrintsTheStepLibrary(t *testing.T) {
	t.Parallel()
	o := ensembleCmd(t, "", "test", "--list-steps")
	if o.code != 0 {
		t.Fatalf("exit %d: %s", o.code, o.stderr)
	}
	var want strings.Builder
	bdd.ListSteps(&want)
	if o.stdout != want.String() || !strings.Contains(o.stdout, "When the ensemble runs\n") {
		t.Errorf("--list-steps printed:\n%s\nwant:\n%s", o.stdout, want.String())
	}
	if strings.Contains(o.stdout, "SPEC") || strings.Contains(o.stdout, "§") {
		t.Errorf("--list-steps cites a document the repository does not have:\n%s", o.stdout)
	}
}

// With no path, `ensemble test` runs the .feature files under the current
// folder: at the repository's root, the examples', not the project's own
// suite (under features/testdata/, whose steps are Go code) nor this
// package's test data. Each example's folder is then tested as the current
// folder, in parallel (one test run at the root runs them one after the
// other: on a busy machine, minutes).
func TestTestWithNoPathAtTheRepositoryRoot(t *testing.T) {
	t.Parallel()
	root := filepath.Join("..", "..")
	found, err := bdd.FindFeatures([]string{root})
	if err != nil {
		t.Fatal(err)
	}
	examples, _ := filepath.Glob(filepath.Join(root, "examples", "*", "*.feature"))
	for _, f := range found {
		if slices.Contains(strings.Split(filepath.ToSlash(f), "/"), "testdata") {
			t.Errorf("at the repository's root, the test run picks up test data: %s", f)
		}
	}
	if len(examples) == 0 || !slices.Equal(slices.DeleteFunc(slices.Clone(found), func(f string) bool { return !slices.Contains(examples, f) }), examples) {
		t.Fatalf("at the repository's root, the test run finds:\n%s\nwant every example's:\n%s", strings.Join(found, "\n"), strings.Join(examples, "\n"))
	}
	for _, f := range found {
		dir := filepath.Dir(f)
		name, _ := filepath.Rel(root, dir)
		t.Run(filepath.ToSlash(name), func(t *testing.T) {
			t.Parallel()
			cmd := cliCommand(t, []string{"ENSEMBLE_PROFILES="}, "test", "--format", "progress")
			cmd.Dir = dir
			var stdout, stderr bytes.Buffer
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			if code := exitCode(t, cmd.Run()); code != 0 {
				t.Fatalf("exit %d, want 0\nstdout:\n%s\nstderr:\n%s", code, stdout.String(), stderr.String())
			}
			if strings.Contains(stdout.String(), "undefined") {
				t.Errorf("undefined steps:\n%s", stdout.String())
			}
		})
	}
}
