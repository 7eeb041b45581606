package bdd

import (
	"bufio"
	"context"
	"encoding/json"
	"encoding/xml"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/ensemble-run/ensemble/internal/report"
)

// runRepeated runs the scenarios of pl with repeats and pass rates, and
// reports them in the formats asked for.
func runRepeated(ctx context.Context, o *RunOptions, pl *plan, out, stderr io.Writer) (int, error) {
	formats, err := checkFormatNames(o.Format)
	if err != nil {
		return ExitUsage, err
	}
	var base *Baseline
	if o.Baseline != "" {
		if base, err = readBaseline(o.Baseline); err != nil {
			return ExitUsage, err
		}
	}
	// The report files are created before the runs, so that a folder that
	// cannot hold them is said before any money is spent.
	writers := make([]io.Writer, len(formats))
	for i, f := range formats {
		name, file, hasFile := strings.Cut(f, ":")
		writers[i] = out
		if !hasFile {
			continue
		}
		if err := os.MkdirAll(filepath.Dir(file), 0o755); err != nil {
			return ExitUsage, usagef("format %s: cannot create the report: %v", name, err)
		}
		fh, err := CreatePrivate(file)
		if err != nil {
			return ExitUsage, usagef("format %s: cannot create the report: %v", name, err)
		}
		defer fh.Close()
		writers[i] = fh
	}
	if len(pl.scenarios) == 0 {
		return ExitUsage, usagef("no scenario matches --tags %s", o.Tags)
	}
	var saveTo *report.File
	if o.SaveBaseline != "" {
		if saveTo, err = createBaseline(o.SaveBaseline); err != nil {
			return ExitUsage, err
		}
		defer saveTo.Discard() // after Commit, a no-op
	}
	undefined := &undefinedSteps{}
	start := time.Now()
	rr := runAll(ctx, o, pl, undefined)
	elapsed := time.Since(start)
	checkMetrics(rr.ts)

	var cmp []*comparison
	if base != nil {
		cmp = compare(base, rr.ts)
	}
	interrupted := ctx.Err() != nil
	switch {
	case o.SaveBaseline != "" && interrupted:
		// A baseline of the runs that ended before Ctrl-C would hold pass
		// rates of fewer runs than asked, read later as a full one.
		fmt.Fprintf(stderr, "test: the baseline %s was not saved: the test run was interrupted before its scenarios ran their runs\n", o.SaveBaseline)
	case o.SaveBaseline != "":
		if err := writeBaseline(saveTo, o.SaveBaseline, baselineOf(rr.ts)); err != nil {
			return ExitUsage, err
		}
	}
	for i, f := range formats {
		name, _, _ := strings.Cut(f, ":")
		w := bufio.NewWriter(writers[i])
		switch name {
		case "junit":
			writeRepeatJUnit(w, rr, elapsed)
		case "cucumber":
			writeRepeatCucumber(w, rr)
		case "markdown":
			writeMarkdown(w, rr, cmp, o.Baseline)
		default:
			writeRepeatText(w, rr, cmp, o.Baseline, elapsed)
		}
		if err := w.Flush(); err != nil {
			return ExitUsage, usagef("writing the %s report: %v", name, err)
		}
	}
	undefined.report(stderr)

	return rr.exitCode(cmp, undefined, interrupted), nil
}

// exitCode is the exit code of a test run with repeats: cancelled, then
// stopped by a budget, then failed (a scenario that did not pass or did
// not finish, a regression, an undefined step), else passed.
func (rr *repeatRun) exitCode(cmp []*comparison, undefined *undefinedSteps, interrupted bool) int {
	switch {
	case interrupted:
		return ExitCancelled
	case rr.budget != "":
		return ExitBudget
	case len(undefined.steps) > 0:
		return ExitFailed
	}
	for _, t := range rr.ts {
		if t.verdict != passing { // failed, or not finished (interrupted)
			return ExitFailed
		}
	}
	for _, c := range cmp {
		if c.change == regression || c.spend.regressed() {
			return ExitFailed
		}
	}
	return ExitPassed
}

// percent formats a share as a whole percentage: 0.7 → "70%".
func percent(x float64) string { return strconv.Itoa(int(math.Round(x*100))) + "%" }

// needPercent formats a pass rate needed, to a tenth of a percent: 0.955 →
// "95.5%".
func needPercent(x float64) string {
	return strconv.FormatFloat(math.Round(x*1000)/10, 'f', -1, 64) + "%"
}

// counts is the line of a scenario's runs: "14/20 passed (70%, 95% CI
// 48–85%), needs 60%".
func (t *tracked) counts() string {
	n := t.done()
	if n == 0 {
		return fmt.Sprintf("0/%d runs ended, needs %s", t.maxRuns, needPercent(t.need))
	}
	lo, hi := wilson(t.passes, n)
	return fmt.Sprintf("%d/%d passed (%s, 95%% CI %d–%s), needs %s", t.passes, n,
		percent(float64(t.passes)/float64(n)), int(math.Round(lo*100)), percent(hi), needPercent(t.need))
}

// outcome is the scenario's verdict in a word, and the runs it saved.
func (t *tracked) outcomeText() string {
	var s string
	switch t.verdict {
	case passing:
		s = "passed"
	case failing:
		s = "FAILED"
	default:
		s = "not finished"
	}
	if t.stopped {
		s += fmt.Sprintf(": stopped early, %d of %d runs saved", t.saved(), t.maxRuns)
	}
	return s
}

// firstFailure is the first counted failing run.
func (t *tracked) firstFailure() *runResult {
	for _, r := range t.runs {
		if !r.passed {
			return r
		}
	}
	return nil
}

// writeRepeatText writes the text report: each scenario's counts and
// verdict, the first failure of one that failed, why a flaky one failed,
// the comparison with a baseline, and a summary.
func writeRepeatText(w io.Writer, rr *repeatRun, cmp []*comparison, basePath string, elapsed time.Duration) {
	var passed, failed, unfinished, runs, saved int
	for _, t := range rr.ts {
		fmt.Fprintf(w, "%s: %s %s\n", t.where(), t.keyword, t.name)
		fmt.Fprintf(w, "  %s: %s\n", t.counts(), t.outcomeText())
		if l := t.metricsLine(); l != "" {
			fmt.Fprintf(w, "  %s\n", l)
		}
		for _, f := range t.metricFailures {
			fmt.Fprintf(w, "  %s\n", f)
		}
		if r := t.firstFailure(); r != nil {
			fmt.Fprintf(w, "  run %d failed: %s\n", r.n, indentRest(r.failure, "    "))
		}
		if f := explainFlake(t.runs); f != nil {
			for _, l := range f.lines() {
				fmt.Fprintf(w, "  %s\n", l)
			}
		}
		switch t.verdict {
		case passing:
			passed++
		case failing:
			failed++
		default:
			unfinished++
		}
		runs += t.done()
		saved += t.saved()
	}
	if cmp != nil {
		writeComparisonText(w, cmp, basePath)
	}
	fmt.Fprintln(w)
	parts := []string{fmt.Sprintf("%d passed", passed)}
	if failed > 0 {
		parts = append(parts, fmt.Sprintf("%d failed", failed))
	}
	if unfinished > 0 {
		parts = append(parts, fmt.Sprintf("%d not finished", unfinished))
	}
	fmt.Fprintf(w, "%d scenarios (%s), %d runs", len(rr.ts), strings.Join(parts, ", "), runs)
	if saved > 0 {
		fmt.Fprintf(w, " (%d saved by early stops)", saved)
	}
	if rr.spent.Requests > 0 {
		fmt.Fprintf(w, ", %d model requests", rr.spent.Requests)
	}
	if rr.spent.Cost > 0 {
		fmt.Fprintf(w, ", cost %s", formatCost(rr.spent.Cost))
	}
	fmt.Fprintf(w, ", %s\n", elapsed.Round(time.Millisecond))
	if u := rr.simulatedSpent(); u.Requests > 0 {
		fmt.Fprintln(w, simSpendLine(u))
	}
	if rr.budget != "" {
		fmt.Fprintf(w, "stopped starting runs: %s\n", rr.budget)
	}
}

func indentRest(s, indent string) string {
	return strings.ReplaceAll(strings.TrimRight(s, "\n"), "\n", "\n"+indent)
}

// writeComparisonText writes what changed since the baseline.
func writeComparisonText(w io.Writer, cmp []*comparison, basePath string) {
	fmt.Fprintf(w, "\ncompared with the baseline %s:\n", basePath)
	counts := map[change]int{}
	for _, c := range cmp {
		counts[c.change]++
		label := fmt.Sprintf("%s: %s", c.path, c.name)
		switch c.change {
		case regression:
			fmt.Fprintf(w, "  REGRESSION %s: %s, was %s (Fisher's exact test p %s)\n", label, c.now.rate(), c.base.rate(), pValue(c.p))
		case improvement:
			fmt.Fprintf(w, "  improvement %s: %s, was %s (p %s)\n", label, c.now.rate(), c.base.rate(), pValue(c.p))
		case added:
			fmt.Fprintf(w, "  new %s: %s, not in the baseline\n", label, c.now.rate())
		case missing:
			fmt.Fprintf(w, "  missing %s: in the baseline (%s), not run\n", label, c.base.rate())
		case notRun:
			fmt.Fprintf(w, "  not run %s: no run ended\n", label)
		}
	}
	fmt.Fprintf(w, "  %s\n", changeSummary(counts))
	writeSpendText(w, cmp)
}

// writeMarkdown writes the scenarios' pass rates as a Markdown table, fit
// for a pull-request comment: with a baseline, each beside its baseline's,
// regressions first.
func writeMarkdown(w io.Writer, rr *repeatRun, cmp []*comparison, basePath string) {
	metrics := false
	for _, t := range rr.ts {
		metrics = metrics || len(t.metrics) > 0
	}
	if cmp == nil {
		if metrics {
			fmt.Fprintln(w, "| Scenario | Passed | Needs | pass^k, pass@k | Verdict |")
			fmt.Fprintln(w, "|---|---|---|---|---|")
		} else {
			fmt.Fprintln(w, "| Scenario | Passed | Needs | Verdict |")
			fmt.Fprintln(w, "|---|---|---|---|")
		}
		for _, t := range rr.ts {
			m := ""
			if metrics {
				m = " " + mdText(t.metricsLine()) + " |"
			}
			fmt.Fprintf(w, "| %s %s | %s | %s |%s %s |\n", mdCode(t.path), mdText(t.name), markdownRate(t), needPercent(t.need), m, mdText(t.outcomeText()))
		}
	} else {
		counts := map[change]int{}
		for _, c := range cmp {
			counts[c.change]++
		}
		fmt.Fprintf(w, "**%s**, %s, compared with %s%s\n\n", plural(counts[regression], "regression"),
			strings.TrimPrefix(changeSummary(counts), plural(counts[regression], "regression")+", "), mdCode(filepath.ToSlash(basePath)), spendHeadline(cmp))
		fmt.Fprintln(w, "| | Scenario | Baseline | Now | p | Verdict |")
		fmt.Fprintln(w, "|---|---|---|---|---|---|")
		order := []change{regression, improvement, added, missing, notRun, unchanged}
		for _, ch := range order {
			for _, c := range cmp {
				if c.change != ch {
					continue
				}
				now, verdict := "–", ""
				if c.t != nil {
					now, verdict = markdownRate(c.t), c.t.outcomeText()
					if l := c.t.metricsLine(); l != "" {
						verdict += "; " + l
					}
				}
				p := "–"
				if c.base != nil && c.now != nil {
					p = strings.TrimPrefix(pValue(c.p), "= ")
				}
				fmt.Fprintf(w, "| %s | %s %s | %s | %s | %s | %s |\n", changeMark[ch], mdCode(c.path), mdText(c.name), c.base.rate(), now, p, mdText(verdict))
			}
		}
		writeSpendMarkdown(w, cmp)
	}
	var runs, saved int
	for _, t := range rr.ts {
		runs += t.done()
		saved += t.saved()
	}
	fmt.Fprintf(w, "\n%d runs", runs)
	if saved > 0 {
		fmt.Fprintf(w, ", %d saved by early stops", saved)
	}
	if rr.spent.Requests > 0 {
		fmt.Fprintf(w, ", %d model requests", rr.spent.Requests)
	}
	if rr.spent.Cost > 0 {
		fmt.Fprintf(w, ", cost %s", formatCost(rr.spent.Cost))
	}
	fmt.Fprintln(w)
	if rr.budget != "" {
		fmt.Fprintf(w, "\nStopped starting runs: %s.\n", rr.budget)
	}
}

// mdText is s as the text of a Markdown table's cell: on one line, its
// pipes escaped (an unescaped one would start another cell), and the
// characters that would make it a link, HTML, emphasis or code escaped,
// so that it reads as written (a scenario's name is anyone's text).
func mdText(s string) string {
	var b strings.Builder
	for _, r := range oneLineCell(s) {
		if strings.ContainsRune("\\|`*_[]<>~", r) {
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	return b.String()
}

// mdCode is s as a code span in a Markdown table's cell: fenced by more
// backquotes than it holds in a row, its pipes escaped (which a table
// reads even in a code span). A backslash would escape the pipe after it
// instead, so such a path is written as text.
func mdCode(s string) string {
	s = oneLineCell(s)
	if strings.Contains(s, `\`) {
		return mdText(s)
	}
	longest, run := 0, 0
	for _, r := range s {
		if r == '`' {
			run++
			longest = max(longest, run)
		} else {
			run = 0
		}
	}
	fence := strings.Repeat("`", longest+1)
	pad := ""
	if longest > 0 {
		pad = " " // a code span that starts or ends with a backquote needs one
	}
	return fence + pad + strings.ReplaceAll(s, "|", `\|`) + pad + fence
}

// oneLineCell is s with its line breaks made spaces: a table's row is one
// line.
func oneLineCell(s string) string {
	return strings.NewReplacer("\r\n", " ", "\n", " ", "\r", " ").Replace(s)
}

// pValue formats a p-value: "= 0.012", "< 0.001".
func pValue(p float64) string {
	if p < 0.001 {
		return "< 0.001"
	}
	return fmt.Sprintf("= %.3f", p)
}

func plural(n int, word string) string {
	if n == 1 {
		return "1 " + word
	}
	return fmt.Sprintf("%d %ss", n, word)
}

// changeSummary counts the changes: "1 regression, 0 improvements, …".
func changeSummary(counts map[change]int) string {
	return fmt.Sprintf("%s, %s, %d unchanged, %d new, %d missing", plural(counts[regression], "regression"),
		plural(counts[improvement], "improvement"), counts[unchanged], counts[added], counts[missing])
}

var changeMark = map[change]string{
	regression:  "🔴 regression",
	improvement: "🟢 improvement",
	added:       "🆕 new",
	missing:     "⚪ missing",
	notRun:      "⚪ not run",
	unchanged:   "",
}

func markdownRate(t *tracked) string {
	n := t.done()
	if n == 0 {
		return "–"
	}
	lo, hi := wilson(t.passes, n)
	return fmt.Sprintf("%d/%d (%s, CI %d–%s)", t.passes, n, percent(float64(t.passes)/float64(n)), int(math.Round(lo*100)), percent(hi))
}

// writeRepeatJUnit writes the JUnit report of a run with repeats: one
// testcase per scenario, failed when its pass rate did not meet its
// need, its counts in its system-out (and in the failure's message).
func writeRepeatJUnit(w io.Writer, rr *repeatRun, elapsed time.Duration) {
	doc := junitSuites{Name: "ensemble", Time: seconds(elapsed)}
	byFile := map[string]*junitSuite{}
	for _, t := range rr.ts {
		s := byFile[t.file]
		if s == nil {
			name := t.featureName
			if name == "" {
				name = t.file
			}
			s = &junitSuite{Name: name, File: t.file}
			byFile[t.file] = s
			doc.Suites = append(doc.Suites, s)
		}
		var d time.Duration
		for _, r := range t.runs {
			d += r.duration
		}
		c := &junitCase{Name: t.name, Classname: s.Name, Time: seconds(d), SystemOut: t.counts() + ": " + t.outcomeText()}
		if ps := append(t.junitProperties(), t.simulatorProperties()...); len(ps) > 0 {
			if s.Properties == nil {
				s.Properties = &junitProperties{}
			}
			s.Properties.Props = append(s.Properties.Props, ps...)
		}
		if l := t.metricsLine(); l != "" {
			c.SystemOut += "\n" + l
		}
		switch t.verdict {
		case failing:
			msg := t.counts()
			for _, f := range t.metricFailures {
				msg += "; " + f
			}
			if r := t.firstFailure(); r != nil {
				msg += "; run " + strconv.Itoa(r.n) + ": " + r.failure
			}
			c.Failure = &junitOutcome{Message: msg, Text: msg}
			s.Failures++
		case undecided:
			c.Skipped = &junitOutcome{Message: "not finished: " + rr.budget}
			s.Skipped++
		}
		s.Tests++
		s.Cases = append(s.Cases, c)
	}
	for _, s := range doc.Suites {
		var d float64
		for _, c := range s.Cases {
			v, _ := strconv.ParseFloat(c.Time, 64)
			d += v
		}
		s.Time = strconv.FormatFloat(d, 'f', 3, 64)
		doc.Tests += s.Tests
		doc.Failures += s.Failures
	}
	if _, err := io.WriteString(w, xml.Header); err != nil {
		return
	}
	enc := xml.NewEncoder(w)
	enc.Indent("", "  ")
	if err := enc.Encode(&doc); err == nil {
		_, _ = io.WriteString(w, "\n")
	}
}

// The Cucumber JSON of a run with repeats: godog's layout (features,
// their elements, their steps), the steps' results those of one run (the
// first failing one of a scenario that failed, else the last), the
// counts in the scenario's description and in members of their own.
type (
	cukeFeature struct {
		URI         string         `json:"uri"`
		ID          string         `json:"id"`
		Keyword     string         `json:"keyword"`
		Name        string         `json:"name"`
		Description string         `json:"description"`
		Line        int64          `json:"line"`
		Elements    []*cukeElement `json:"elements"`
	}
	cukeElement struct {
		ID          string       `json:"id"`
		Keyword     string       `json:"keyword"`
		Name        string       `json:"name"`
		Description string       `json:"description"`
		Line        int64        `json:"line"`
		Type        string       `json:"type"`
		Tags        []cukeTag    `json:"tags,omitempty"`
		Steps       []cukeStep   `json:"steps"`
		Passes      int          `json:"passes"`
		Runs        int          `json:"runs"`
		MaxRuns     int          `json:"max_runs"`
		PassRate    float64      `json:"pass_rate_needed"`
		Metrics     []cukeMetric `json:"metrics,omitempty"`
	}
	cukeMetric struct {
		Name  string   `json:"name"`
		K     int      `json:"k"`
		Value *float64 `json:"value"` // null with fewer runs than k
		Min   float64  `json:"at_least"`
		Line  int64    `json:"line"`
	}
	cukeTag struct {
		Name string `json:"name"`
		Line int64  `json:"line"`
	}
	cukeStep struct {
		Keyword string     `json:"keyword"`
		Name    string     `json:"name"`
		Line    int64      `json:"line"`
		Result  cukeResult `json:"result"`
	}
	cukeResult struct {
		Status   string `json:"status"`
		Error    string `json:"error_message,omitempty"`
		Duration int64  `json:"duration,omitempty"`
	}
)

func writeRepeatCucumber(w io.Writer, rr *repeatRun) {
	var feats []*cukeFeature
	byFile := map[string]*cukeFeature{}
	slug := func(s string) string { return strings.ToLower(strings.ReplaceAll(strings.TrimSpace(s), " ", "-")) }
	for _, t := range rr.ts {
		f := byFile[t.file]
		if f == nil {
			f = &cukeFeature{URI: t.file, ID: slug(t.featureName), Keyword: "Feature", Name: t.featureName, Line: t.featureLine}
			byFile[t.file] = f
			feats = append(feats, f)
		}
		e := &cukeElement{ID: f.ID + ";" + slug(t.name), Keyword: t.keyword, Name: t.name, Line: t.line, Type: "scenario",
			Description: t.counts() + ": " + t.outcomeText(), Passes: t.passes, Runs: t.done(), MaxRuns: t.maxRuns, PassRate: t.need}
		for _, m := range t.metrics {
			cm := cukeMetric{Name: m.name(), K: m.k, Min: m.min, Line: m.line}
			if v := m.value(t.done(), t.passes); v == v {
				cm.Value = &v
			}
			e.Metrics = append(e.Metrics, cm)
		}
		for _, tag := range t.tags {
			e.Tags = append(e.Tags, cukeTag{Name: tag, Line: t.line - 1})
		}
		shown := t.firstFailure()
		if shown == nil && len(t.runs) > 0 {
			shown = t.runs[len(t.runs)-1]
		}
		for i, st := range t.steps {
			cs := cukeStep{Keyword: st.keyword, Name: st.text, Line: st.line, Result: cukeResult{Status: "skipped"}}
			if shown != nil && i < len(shown.steps) {
				cs.Result.Status, cs.Result.Error = shown.steps[i].status, shown.steps[i].err
			}
			e.Steps = append(e.Steps, cs)
		}
		f.Elements = append(f.Elements, e)
	}
	if feats == nil {
		feats = []*cukeFeature{}
	}
	data, err := json.MarshalIndent(feats, "", "    ")
	if err == nil {
		_, _ = w.Write(append(data, '\n'))
	}
}
