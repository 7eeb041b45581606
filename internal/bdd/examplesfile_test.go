package bdd

import (
	"encoding/xml"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// examplesEnsemble echoes its input: a script agent with no model.
const examplesFeature = `Feature: rows from a file
  Scenario: before
    Given the ensemble "e.yaml"
    When the ensemble runs
    Then the output of agent "answer" is "yes"

  @examples(file=%s)
  Scenario Outline: says <word>
    Given the ensemble "e.yaml"
    When the ensemble runs
    Then the output of agent "answer" is "<want>"

  Scenario: after
    Given the ensemble "e.yaml"
    When the ensemble runs
    Then the output of agent "answer" is "yes"
`

// The rows of a JSONL, CSV or YAML file fill an outline's placeholders:
// each row is a testcase of the JUnit report, a row whose value differs
// fails, and the scenarios after the outline keep their lines.
func TestExamplesFromAFile(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ file, data string }{
		{"cases.jsonl", `{"word": "one", "want": "yes"}` + "\n" + `{"word": "two", "want": "no"}` + "\n\n" + `{"want": "yes", "word": "three", "extra": 1}` + "\n"},
		{"cases.csv", "word,want\none,yes\ntwo,no\nthree,yes\n"},
		{"cases.yaml", "- {word: one, want: \"yes\"}\n- word: two\n  want: \"no\"\n- {word: three, want: \"yes\"}\n"},
	} {
		t.Run(tc.file, func(t *testing.T) {
			t.Parallel()
			m := newCoinModel(t, 1, 1)
			dir := writeTempFiles(t, map[string]string{"e.yaml": coinEnsemble, "a.feature": strings.Replace(examplesFeature, "%s", tc.file, 1), tc.file: tc.data})
			junitFile := filepath.Join(dir, "j.xml")
			o := runRepeats(t, RunOptions{Options: liveOptions(m, true), Paths: []string{dir}, Format: "junit:" + junitFile + ",progress"})
			if o.code != ExitFailed || o.err != nil {
				t.Fatalf("exit %d, %v:\n%s", o.code, o.err, o.out)
			}
			for _, want := range []string{"a.feature:2: Scenario before", "a.feature:8: Scenario Outline says one", "a.feature:8: Scenario Outline says two",
				"a.feature:8: Scenario Outline says three", "a.feature:13: Scenario after", "5 scenarios (4 passed, 1 failed)"} {
				if !strings.Contains(o.out, want) {
					t.Errorf("the report lacks %q:\n%s", want, o.out)
				}
			}
			if !regexp.MustCompile(`says two\n.*FAILED`).MatchString(o.out) {
				t.Errorf("row two does not fail:\n%s", o.out)
			}
			data, err := os.ReadFile(junitFile)
			if err != nil {
				t.Fatal(err)
			}
			var j struct {
				Tests int `xml:"tests,attr"`
				Cases []struct {
					Name    string    `xml:"name,attr"`
					Failure *struct{} `xml:"failure"`
				} `xml:"testsuite>testcase"`
			}
			if err := xml.Unmarshal(data, &j); err != nil {
				t.Fatal(err)
			}
			if j.Tests != 5 || len(j.Cases) != 5 || j.Cases[2].Name != "says two" || j.Cases[2].Failure == nil || j.Cases[1].Failure != nil {
				t.Errorf("JUnit:\n%s", data)
			}
		})
	}
}

// --sample N runs N rows picked by --seed, the same for the same seed; an
// outline whose name does not tell the rows apart numbers them by their
// line in the file, whichever were picked.
func TestExamplesSample(t *testing.T) {
	t.Parallel()
	var rows strings.Builder
	for i := range 20 {
		rows.WriteString(`{"n": "` + string(rune('a'+i)) + `"}` + "\n")
	}
	feature := `Feature: f
  @examples(file=rows.jsonl)
  Scenario Outline: a row
    Given the ensemble "e.yaml"
    When the ensemble runs
    Then the output of agent "answer" is "<n>"
`
	dir := writeTempFiles(t, map[string]string{"e.yaml": coinEnsemble, "a.feature": feature, "rows.jsonl": rows.String()})
	names := func(seed uint64) []string {
		m := newCoinModel(t, 1, 1)
		o := runRepeats(t, RunOptions{Options: liveOptions(m, true), Paths: []string{dir}, Sample: 3, Seed: seed})
		got := regexp.MustCompile(`Scenario Outline a row #(\d+)`).FindAllStringSubmatch(o.out, -1)
		var out []string
		for _, g := range got {
			out = append(out, g[1])
		}
		if len(out) != 3 || !strings.Contains(o.out, "3 scenarios") {
			t.Fatalf("seed %d: %v:\n%s", seed, out, o.out)
		}
		return out
	}
	a, b, c := names(7), names(7), names(8)
	if strings.Join(a, ",") != strings.Join(b, ",") {
		t.Errorf("seed 7 picked %v, then %v", a, b)
	}
	if strings.Join(a, ",") == strings.Join(c, ",") {
		t.Logf("seeds 7 and 8 picked the same rows %v (possible, unlikely)", a)
	}
}

// Errors name the feature file and the tag's line.
func TestExamplesErrors(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, tag, file, data, want string
	}{
		{"missing file", "@examples(file=nope.jsonl)", "", "", "a.feature:7: @examples(file=nope.jsonl): "},
		{"bad tag", "@examples(cases.jsonl)", "", "", "a.feature:7: tag @examples(cases.jsonl): write @examples(file=FILE)"},
		{"bad extension", "@examples(file=c.txt)", "c.txt", "x", `must end in .jsonl, .csv, .yaml or .yml, not ".txt"`},
		{"bad JSONL line", "@examples(file=c.jsonl)", "c.jsonl", `{"word": "a", "want": "b"}` + "\n[1]\n", "c.jsonl:2: not a JSON object"},
		{"a row without a column", "@examples(file=c.jsonl)", "c.jsonl", `{"word": "a", "want": "b"}` + "\n" + `{"word": "b"}` + "\n", `a.feature:7: @examples(file=c.jsonl): row 2 of c.jsonl has no "want" (the outline's <want>)`},
		{"no rows", "@examples(file=c.csv)", "c.csv", "word,want\n", "a.feature:7: @examples(file=c.csv): c.csv has no rows"},
		{"YAML not a list", "@examples(file=c.yaml)", "c.yaml", "word: a\n", "not a YAML list of mappings"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			files := map[string]string{"e.yaml": coinEnsemble, "a.feature": strings.Replace(examplesFeature, "@examples(file=%s)", tc.tag, 1)}
			if tc.file != "" {
				files[tc.file] = tc.data
			}
			dir := writeTempFiles(t, files)
			o := runRepeats(t, RunOptions{Paths: []string{dir}})
			if o.code != ExitUsage || o.err == nil || !strings.Contains(o.err.Error(), tc.want) {
				t.Fatalf("exit %d, %v, want %q", o.code, o.err, tc.want)
			}
		})
	}
}
