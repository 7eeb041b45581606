package bdd

import (
	"encoding/xml"
	"fmt"
	"io"
	"strconv"
	"sync"
	"time"

	"github.com/cucumber/godog"
	"github.com/cucumber/godog/formatters"
	messages "github.com/cucumber/messages/go/v21"
)

// junitFormat is the name of bdd's JUnit report among godog's formats:
// --format junit selects it.
const junitFormat = "ensemble-junit"

func init() {
	godog.Format(junitFormat, "JUnit XML that the strict JUnit schema of Jenkins (junit-10.xsd) accepts", newJUnit)
}

// The JUnit report: one testsuite per feature, one testcase per scenario
// (classname: the feature, name: the scenario), its outcome as a child
// element (failure, error or skipped), and counts on the testsuites that
// the strict schema allows. Lenient readers (GitLab, GitHub actions) read
// the same elements.
type (
	junitSuites struct {
		XMLName  xml.Name      `xml:"testsuites"`
		Name     string        `xml:"name,attr"`
		Tests    int           `xml:"tests,attr"`
		Failures int           `xml:"failures,attr"`
		Errors   int           `xml:"errors,attr"`
		Time     string        `xml:"time,attr"`
		Suites   []*junitSuite `xml:"testsuite"`
	}
	junitSuite struct {
		Name     string `xml:"name,attr"`
		Tests    int    `xml:"tests,attr"`
		Failures int    `xml:"failures,attr"`
		Errors   int    `xml:"errors,attr"`
		Skipped  int    `xml:"skipped,attr"`
		Time     string `xml:"time,attr"`
		File     string `xml:"file,attr,omitempty"`
		// Properties carry the repeated scenarios' counts and metrics,
		// "name: pass^3" (the JUnit schema has none in a testcase).
		Properties *junitProperties `xml:"properties,omitempty"`
		Cases      []*junitCase     `xml:"testcase"`
	}
	junitCase struct {
		Name      string          `xml:"name,attr"`
		Classname string          `xml:"classname,attr"`
		Time      string          `xml:"time,attr"`
		Failure   *junitOutcome   `xml:"failure"`
		Errors    []*junitOutcome `xml:"error"`
		Skipped   *junitOutcome   `xml:"skipped"`
		// SystemOut carries a repeated scenario's counts (repeatreport.go).
		SystemOut string `xml:"system-out,omitempty"`

		start, end time.Time
		passed     int // steps that passed
		skipped    int // steps that were skipped
	}
	junitProperties struct {
		Props []junitProperty `xml:"property"`
	}
	junitProperty struct {
		Name  string `xml:"name,attr"`
		Value string `xml:"value,attr"`
	}
	junitOutcome struct {
		Type    string `xml:"type,attr,omitempty"`
		Message string `xml:"message,attr,omitempty"`
		Text    string `xml:",chardata"`
	}
)

// junit is a godog formatter that collects the outcome of each scenario
// and writes the report at the end.
type junit struct {
	out   io.Writer
	mu    sync.Mutex
	start time.Time
	doc   junitSuites
	byURI map[string]*junitSuite
	cases map[string]*junitCase // by pickle id
	steps stepPlaces            // the features' steps, by id
}

func newJUnit(suite string, out io.Writer) formatters.Formatter {
	return &junit{out: out, doc: junitSuites{Name: suite}, byURI: map[string]*junitSuite{}, cases: map[string]*junitCase{}, steps: stepPlaces{}}
}

func (f *junit) TestRunStarted() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.start = time.Now()
}

func (f *junit) Feature(doc *messages.GherkinDocument, uri string, _ []byte) {
	f.mu.Lock()
	defer f.mu.Unlock()
	name := uri
	if doc.Feature != nil && doc.Feature.Name != "" {
		name = doc.Feature.Name
	}
	f.steps.add(doc, uri)
	s := &junitSuite{Name: name, File: featureFile(uri)}
	f.byURI[uri] = s
	f.doc.Suites = append(f.doc.Suites, s)
}

func (f *junit) Pickle(p *messages.Pickle) {
	f.mu.Lock()
	defer f.mu.Unlock()
	s := f.byURI[p.Uri]
	if s == nil { // godog announces a feature before its scenarios
		s = &junitSuite{Name: p.Uri, File: featureFile(p.Uri)}
		f.byURI[p.Uri] = s
		f.doc.Suites = append(f.doc.Suites, s)
	}
	now := time.Now()
	c := &junitCase{Name: p.Name, Classname: s.Name, start: now, end: now}
	s.Cases = append(s.Cases, c)
	f.cases[p.Id] = c
}

// step records the end of a step of p and returns its scenario.
func (f *junit) step(p *messages.Pickle) *junitCase {
	c := f.cases[p.Id]
	if c == nil {
		c = &junitCase{}
	}
	c.end = time.Now()
	return c
}

func (f *junit) Defined(*messages.Pickle, *messages.PickleStep, *formatters.StepDefinition) {}

func (f *junit) Passed(p *messages.Pickle, _ *messages.PickleStep, _ *formatters.StepDefinition) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.step(p).passed++
}

func (f *junit) Skipped(p *messages.Pickle, _ *messages.PickleStep, _ *formatters.StepDefinition) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.step(p).skipped++
}

func (f *junit) Failed(p *messages.Pickle, st *messages.PickleStep, _ *formatters.StepDefinition, err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	c := f.step(p)
	if c.Failure == nil {
		msg := fmt.Sprintf("Step %s: %v", f.steps.name(st), err)
		c.Failure = &junitOutcome{Message: msg, Text: msg}
	}
}

func (f *junit) Undefined(p *messages.Pickle, st *messages.PickleStep, _ *formatters.StepDefinition) {
	f.addError(p, "undefined", st, undefinedStep(st.Text).Error())
}

func (f *junit) Pending(p *messages.Pickle, st *messages.PickleStep, _ *formatters.StepDefinition) {
	f.addError(p, "pending", st, "pending")
}

func (f *junit) Ambiguous(p *messages.Pickle, st *messages.PickleStep, _ *formatters.StepDefinition, err error) {
	f.addError(p, "ambiguous", st, err.Error())
}

func (f *junit) addError(p *messages.Pickle, typ string, st *messages.PickleStep, what string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	c := f.step(p)
	msg := fmt.Sprintf("Step %s: %s", f.steps.name(st), what)
	c.Errors = append(c.Errors, &junitOutcome{Type: typ, Message: msg, Text: msg})
}

func (f *junit) Summary() {
	f.mu.Lock()
	defer f.mu.Unlock()
	d := &f.doc
	for _, s := range d.Suites {
		numberRepeatedNames(s.Cases)
		var first, last time.Time
		for _, c := range s.Cases {
			if c.Failure == nil && len(c.Errors) == 0 && c.passed == 0 && c.skipped > 0 {
				c.Skipped = &junitOutcome{Message: "every step was skipped"}
			}
			if c.Failure == nil && len(c.Errors) == 0 && c.passed == 0 && c.skipped == 0 {
				// godog fails a scenario with no steps as undefined.
				c.Errors = []*junitOutcome{{Type: "undefined", Message: noSteps, Text: noSteps}}
			}
			c.Time = seconds(c.end.Sub(c.start))
			if first.IsZero() || c.start.Before(first) {
				first = c.start
			}
			if c.end.After(last) {
				last = c.end
			}
			s.Tests++
			switch {
			case c.Failure != nil:
				s.Failures++
			case len(c.Errors) > 0:
				s.Errors++
			case c.Skipped != nil:
				s.Skipped++
			}
		}
		s.Time = seconds(last.Sub(first))
		d.Tests += s.Tests
		d.Failures += s.Failures
		d.Errors += s.Errors
	}
	d.Time = seconds(time.Since(f.start))
	if f.start.IsZero() {
		d.Time = seconds(0)
	}
	if _, err := io.WriteString(f.out, xml.Header); err != nil {
		return
	}
	enc := xml.NewEncoder(f.out)
	enc.Indent("", "  ")
	if err := enc.Encode(d); err == nil {
		_, _ = io.WriteString(f.out, "\n")
	}
}

// numberRepeatedNames numbers the scenarios of a feature that share a name
// (the rows of a scenario outline): "name #1", "name #2".
func numberRepeatedNames(cases []*junitCase) {
	count := map[string]int{}
	for _, c := range cases {
		count[c.Name]++
	}
	seen := map[string]int{}
	for _, c := range cases {
		if count[c.Name] > 1 {
			seen[c.Name]++
			c.Name = fmt.Sprintf("%s #%d", c.Name, seen[c.Name])
		}
	}
}

// seconds formats a duration as the schema's time: seconds with at most
// three decimals.
func seconds(d time.Duration) string {
	return strconv.FormatFloat(d.Seconds(), 'f', 3, 64)
}
