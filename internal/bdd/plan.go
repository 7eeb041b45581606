package bdd

import (
	"cmp"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"

	gherkin "github.com/cucumber/gherkin/go/v26"
	messages "github.com/cucumber/messages/go/v21"
)

// planned is one scenario (one row of a scenario outline) of a run with
// repeats: where it is, what it is called, and how often and how well it
// must pass.
type planned struct {
	file        string // the feature file, as found
	path        string // its identity: relative to the working folder, with slashes
	featureName string
	featureLine int64
	line        int64 // the line of its Scenario (or Scenario Outline)
	row         int   // which of the scenario's pickles: an outline's row
	keyword     string
	name        string // unique in its feature: repeated names are numbered
	tags        []string
	steps       []plannedStep
	maxRuns     int
	need        float64
	metrics     []*metricStep // its pass^k and pass@k steps (passk.go)
	// contents, when set, is the feature as its runs read it: its
	// outlines' rows from @examples files; pickle is the scenario's among
	// all of contents' pickles (examplesfile.go).
	contents []byte
	pickle   int
}

type plannedStep struct {
	keyword, text string
	line          int64
}

// where is the scenario's file:line, for the report.
func (p *planned) where() string { return fmt.Sprintf("%s:%d", p.file, p.line) }

// plan is the scenarios a run with repeats runs, in file order.
type plan struct {
	scenarios []*planned
	// tagged: some scenario has a @repeat or @pass-rate tag, which makes a
	// run without repeat flags one with repeats.
	tagged bool
}

var (
	repeatTag   = regexp.MustCompile(`^@repeat\((\d+)\)$`)
	passRateTag = regexp.MustCompile(`^@pass-rate\(([0-9.]+)\)$`)
)

// isRepeatTag and isPassRateTag tell the tags meant as @repeat(N) and
// @pass-rate(P), well written or not.
func isRepeatTag(t string) bool {
	return t == "@repeat" || strings.HasPrefix(t, "@repeat(")
}

func isPassRateTag(t string) bool {
	return t == "@pass-rate" || strings.HasPrefix(t, "@pass-rate(")
}

// planScenarios parses the feature files into the scenarios that --tags
// and the files' :LINE select, each with its runs and pass rate: the tags
// @repeat(N) and @pass-rate(P) (a scenario's over its feature's), else
// repeat and need. A malformed tag is a usage error naming its file:line.
func planScenarios(features []*feature, tagExpr string, repeat int, need float64) (*plan, error) {
	pl := &plan{}
	var msgs []string
	cwd, _ := os.Getwd()
	for _, f := range features {
		name, doc := f.name, f.doc
		onlyLine := int64(-1)
		if f.arg != name {
			_, suffix := splitLine(f.arg)
			onlyLine, _ = strconv.ParseInt(suffix[1:], 10, 64)
		}
		if doc.Feature == nil {
			continue // no scenarios
		}
		idPath := filepath.ToSlash(name)
		if abs, err := filepath.Abs(name); err == nil && cwd != "" {
			if rel, err := filepath.Rel(cwd, abs); err == nil {
				idPath = filepath.ToSlash(rel)
			}
		}
		lineOf := func(l int64) int64 { return l }
		if f.x != nil {
			doc, lineOf = f.x.doc, f.x.line
			pl.tagged = true // runs read the expansion: a run with repeats
		}
		idx := indexDocument(doc)
		pickles := gherkin.Pickles(*doc, name, (&messages.Incrementing{}).NewId)
		rows := map[string]int{}
		var all, inFile []*planned
		for pi, pk := range pickles {
			scID := pk.AstNodeIds[0]
			row := rows[scID]
			rows[scID]++
			sc := idx.scenarios[scID]
			if sc == nil {
				continue
			}
			p := &planned{
				file: name, path: idPath, featureName: doc.Feature.Name, featureLine: doc.Feature.Location.Line,
				line: lineOf(sc.Location.Line), row: row, keyword: strings.TrimSpace(sc.Keyword), name: pk.Name,
				maxRuns: repeat, need: need,
			}
			if f.x != nil {
				p.contents, p.pickle = f.x.contents, pi
				// A row from a file is known by its number there, whatever
				// --sample picked, when the name does not tell the rows apart.
				if nums := f.x.rowNumbers[sc.Location.Line]; row < len(nums) && !placeholderR.MatchString(sc.Name) {
					p.name = fmt.Sprintf("%s #%d", pk.Name, nums[row])
				}
			}
			msgs = append(msgs, p.addSteps(pk, idx, lineOf)...)
			// Every scenario of the file is numbered (below), the ones
			// --tags or :LINE leave out too, so that a scenario's name, its
			// identity in a baseline, does not depend on which ran.
			all = append(all, p)
			if onlyLine >= 0 && lineOf(sc.Location.Line) != onlyLine || !matchTags(tagExpr, pk.Tags) {
				continue
			}
			msgs = append(msgs, p.applyTags(pl, pk, idx, lineOf)...)
			for _, m := range p.metrics {
				// A metric step makes a run with repeats, and asks for
				// enough runs before any is made.
				pl.tagged = true
				if p.maxRuns < m.k {
					msgs = append(msgs, fmt.Sprintf("%s:%d: step %q needs at least %d runs of the scenario, it has %d: run it with --repeat %d or tag it @repeat(%d)", name, m.line, m.text, m.k, p.maxRuns, m.k, m.k))
				}
			}
			inFile = append(inFile, p)
		}
		numberRepeated(all)
		if f.x != nil {
			// The expansion runs its outlines last: report in file order.
			slices.SortStableFunc(inFile, func(a, b *planned) int { return cmp.Compare(a.line, b.line) })
		}
		pl.scenarios = append(pl.scenarios, inFile...)
	}
	if len(msgs) > 0 {
		return nil, usagef("%s", strings.Join(msgs, "\n"))
	}
	return pl, nil
}

// addSteps adds the pickle's steps to the scenario, and its metric
// steps to its metrics; the messages are the metric steps' errors.
func (p *planned) addSteps(pk *messages.Pickle, idx *docIndex, lineOf func(int64) int64) []string {
	var msgs []string
	for _, st := range pk.Steps {
		ps := plannedStep{text: st.Text}
		if s := idx.steps[st.AstNodeIds[0]]; s != nil {
			ps.keyword, ps.line = s.Keyword, lineOf(s.Location.Line)
		}
		p.steps = append(p.steps, ps)
		if m, ok, err := parseMetricStep(st.Text); ok {
			if err != nil {
				msgs = append(msgs, fmt.Sprintf("%s:%d: step %q: %v", p.file, ps.line, strings.TrimSpace(ps.keyword)+" "+st.Text, err))
				continue
			}
			m.text, m.line = strings.TrimSpace(ps.keyword)+" "+st.Text, ps.line
			p.metrics = append(p.metrics, m)
		}
	}
	return msgs
}

// applyTags notes the pickle's tags on the scenario, and its @repeat and
// @pass-rate tags (which make the plan's runs repeated); the messages are
// those tags' errors.
func (p *planned) applyTags(pl *plan, pk *messages.Pickle, idx *docIndex, lineOf func(int64) int64) []string {
	var msgs []string
	for _, t := range pk.Tags {
		p.tags = append(p.tags, t.Name)
		at := fmt.Sprintf("%s:%d", p.file, lineOf(idx.tagLines[t.AstNodeId]))
		switch {
		case isRepeatTag(t.Name):
			pl.tagged = true
			m := repeatTag.FindStringSubmatch(t.Name)
			n, err := 0, error(nil)
			if m != nil {
				n, err = strconv.Atoi(m[1])
			}
			if m == nil || err != nil || n < 1 {
				msgs = append(msgs, fmt.Sprintf("%s: tag %s: write @repeat(N) with N a whole number of runs, at least 1", at, t.Name))
				continue
			}
			p.maxRuns = n
		case isPassRateTag(t.Name):
			pl.tagged = true
			m := passRateTag.FindStringSubmatch(t.Name)
			r, err := 0.0, error(nil)
			if m != nil {
				r, err = strconv.ParseFloat(m[1], 64)
			}
			if m == nil || err != nil || r < 0 || r > 1 || math.IsNaN(r) {
				msgs = append(msgs, fmt.Sprintf("%s: tag %s: write @pass-rate(P) with P the share of runs that must pass, from 0 to 1 (e.g. @pass-rate(0.8))", at, t.Name))
				continue
			}
			p.need = r
		}
	}
	return msgs
}

// numberRepeated numbers the scenarios of a feature that share a name
// (the rows of an outline whose name has no <placeholder>), as the JUnit
// report does: "name #1", "name #2"; the names identify them in baselines.
func numberRepeated(ps []*planned) {
	count := map[string]int{}
	for _, p := range ps {
		count[p.name]++
	}
	seen := map[string]int{}
	for _, p := range ps {
		if count[p.name] > 1 {
			seen[p.name]++
			p.name = fmt.Sprintf("%s #%d", p.name, seen[p.name])
		}
	}
}

// docIndex finds the nodes of a parsed feature file by id.
type docIndex struct {
	scenarios map[string]*messages.Scenario
	steps     map[string]*messages.Step
	tagLines  map[string]int64
}

func indexDocument(doc *messages.GherkinDocument) *docIndex {
	x := &docIndex{scenarios: map[string]*messages.Scenario{}, steps: map[string]*messages.Step{}, tagLines: map[string]int64{}}
	tags := func(ts []*messages.Tag) {
		for _, t := range ts {
			x.tagLines[t.Id] = t.Location.Line
		}
	}
	steps := func(ss []*messages.Step) {
		for _, s := range ss {
			x.steps[s.Id] = s
		}
	}
	scenario := func(sc *messages.Scenario) {
		x.scenarios[sc.Id] = sc
		tags(sc.Tags)
		steps(sc.Steps)
		for _, ex := range sc.Examples {
			tags(ex.Tags)
		}
	}
	ft := doc.Feature
	tags(ft.Tags)
	for _, c := range ft.Children {
		switch {
		case c.Background != nil:
			steps(c.Background.Steps)
		case c.Scenario != nil:
			scenario(c.Scenario)
		case c.Rule != nil:
			tags(c.Rule.Tags)
			for _, rc := range c.Rule.Children {
				if rc.Background != nil {
					steps(rc.Background.Steps)
				}
				if rc.Scenario != nil {
					scenario(rc.Scenario)
				}
			}
		}
	}
	return x
}

// matchTags is godog's tag filter (checkTags has checked the expression):
// clauses joined by && must all hold; a clause holds when one of its
// comma-separated tags is there, or a ~tag is not.
func matchTags(expr string, tags []*messages.PickleTag) bool {
	if strings.TrimSpace(expr) == "" {
		return true
	}
	has := func(name string) bool {
		for _, t := range tags {
			if strings.ReplaceAll(t.Name, "@", "") == name {
				return true
			}
		}
		return false
	}
	for _, clause := range strings.Split(expr, "&&") {
		ok := false
		for _, tag := range strings.Split(clause, ",") {
			tag = strings.ReplaceAll(strings.TrimSpace(tag), "@", "")
			if neg, found := strings.CutPrefix(tag, "~"); found {
				ok = ok || !has(neg)
			} else {
				ok = ok || has(tag)
			}
		}
		if !ok {
			return false
		}
	}
	return true
}
