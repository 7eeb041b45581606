package bdd

import (
	"bytes"
	"encoding/xml"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// junitFeatures give every outcome a report shows: passed, failed, an
// undefined step, and the rows of an outline (scenarios sharing a name).
var junitFeatures = map[string]string{
	"a.feature": `Feature: Outcomes

  Scenario: passes
    Given the turn limit is 3

  Scenario: fails
    Then the completion reason is "completed"

  Scenario: is undefined
    Given the moon is made of cheese
`,
	"b.feature": `Feature: An outline

  Scenario Outline: row
    Given the turn limit is <n>

    Examples:
      | n |
      | 1 |
      | 2 |
`,
}

func junitReport(t *testing.T) []byte {
	t.Helper()
	dir := t.TempDir()
	for name, src := range junitFeatures {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	var out, stderr bytes.Buffer
	code, err := Run(RunOptions{Paths: []string{dir}, Format: "junit", Output: &out, Stderr: &stderr})
	if code != ExitFailed || err != nil {
		t.Fatalf("exit %d, %v; want %d\n%s%s", code, err, ExitFailed, out.String(), stderr.String())
	}
	return out.Bytes()
}

// surefireTime is the pattern of the schema's time attribute on
// testsuite(s).
var surefireTime = regexp.MustCompile(`^(([0-9]{0,3},)*[0-9]{3}|[0-9]{0,3})*(\.[0-9]{0,3})?$`)

// The rules of the strict schema that godog's own JUnit report breaks,
// checked without xmllint: no status on a testcase, a classname on each
// (the feature), no skipped on testsuites, times with at most three
// decimals; and the outcome of each scenario as a child element.
func TestJUnitFollowsTheStrictSchema(t *testing.T) {
	t.Parallel()
	report := junitReport(t)
	allowed := map[string][]string{
		"testsuites": {"name", "time", "tests", "failures", "errors"},
		"testsuite":  {"name", "tests", "failures", "errors", "group", "time", "skipped", "timestamp", "hostname", "id", "package", "file", "log", "url", "version"},
		"testcase":   {"name", "time", "classname", "group"},
		"failure":    {"type", "message"},
		"error":      {"type", "message"},
		"skipped":    {"type", "message"},
	}
	dec := xml.NewDecoder(bytes.NewReader(report))
	var suite string
	outcomes := map[string]string{} // testcase name → child element
	var tc string
	for {
		tok, err := dec.Token()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("not XML: %v\n%s", err, report)
		}
		el, ok := tok.(xml.StartElement)
		if !ok {
			continue
		}
		attrs := map[string]string{}
		for _, a := range el.Attr {
			attrs[a.Name.Local] = a.Value
			if !strings.Contains(" "+strings.Join(allowed[el.Name.Local], " ")+" ", " "+a.Name.Local+" ") {
				t.Errorf("<%s> has the attribute %s, which the schema does not allow", el.Name.Local, a.Name.Local)
			}
		}
		switch el.Name.Local {
		case "testsuites", "testsuite":
			if !surefireTime.MatchString(attrs["time"]) {
				t.Errorf("<%s time=%q>: not the schema's time", el.Name.Local, attrs["time"])
			}
			if el.Name.Local == "testsuite" {
				suite = attrs["name"]
			}
		case "testcase":
			tc = attrs["name"]
			outcomes[tc] = "passed"
			if attrs["classname"] != suite || suite == "" {
				t.Errorf("testcase %q: classname %q, want the feature %q", tc, attrs["classname"], suite)
			}
		case "failure", "error", "skipped":
			outcomes[tc] = el.Name.Local
		default:
			t.Errorf("unexpected element <%s>", el.Name.Local)
		}
	}
	want := map[string]string{"passes": "passed", "fails": "failure", "is undefined": "error", "row #1": "passed", "row #2": "passed"}
	if len(outcomes) != len(want) {
		t.Errorf("testcases %v, want %v", outcomes, want)
	}
	for name, o := range want {
		if outcomes[name] != o {
			t.Errorf("testcase %q: %q, want %q\n%s", name, outcomes[name], o, report)
		}
	}
	for _, counts := range []string{
		`<testsuites name="ensemble" tests="5" failures="1" errors="1"`,
		`<testsuite name="Outcomes" tests="3" failures="1" errors="1" skipped="0"`,
	} {
		if !bytes.Contains(report, []byte(counts)) {
			t.Errorf("the report lacks %s:\n%s", counts, report)
		}
	}
}

// The report validates against the Jenkins xunit plugin's junit-10.xsd (a
// copy in testdata/) when xmllint is installed.
func TestJUnitValidatesWithXmllint(t *testing.T) {
	t.Parallel()
	xmllint, err := exec.LookPath("xmllint")
	if err != nil {
		if os.Getenv("ENSEMBLE_CI") != "" {
			t.Fatal("xmllint is not installed, and ENSEMBLE_CI is set: CI installs it (.ci/run)")
		}
		t.Skip("xmllint is not installed (Debian/Ubuntu: apt-get install libxml2-utils): the schema rules are still checked by TestJUnitFollowsTheStrictSchema")
	}
	file := filepath.Join(t.TempDir(), "report.xml")
	if err := os.WriteFile(file, junitReport(t), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(xmllint, "--noout", "--schema", filepath.Join("testdata", "junit-10.xsd"), file).CombinedOutput()
	if err != nil {
		t.Errorf("xmllint: %v\n%s", err, out)
	}
}
