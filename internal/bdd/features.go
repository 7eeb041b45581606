package bdd

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"

	gherkin "github.com/cucumber/gherkin/go/v26"
	messages "github.com/cucumber/messages/go/v21"

	"github.com/ensemble-run/ensemble/ensemble"
	"github.com/ensemble-run/ensemble/internal/readcap"
)

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
		if bytes.HasPrefix(data, utf8BOM) {
			msgs = append(msgs, fmt.Sprintf("%s:1: the file starts with a byte order mark (U+FEFF), which the Gherkin parser reads as text before the Feature keyword: save the file as UTF-8 without a BOM", name))
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
					line = fmt.Sprintf("%s:%s:%s: %s%s", name, m[1], col, m[3], parserHint(m[3]))
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
	lines := strings.Split(string(data), "\n")
	msgs := misspeltInText(name, lines, descs)
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
