package bdd

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/ensemble-run/ensemble/internal/readcap"
	"github.com/ensemble-run/ensemble/internal/report"
)

// Baseline is the pass rates of a test run (--save-baseline), which a later
// run compares its own with (--baseline). A scenario is known by its feature
// file's path, relative to the folder the test ran in and written with
// slashes, and its name in that file (the rows of an outline whose name has
// no <placeholder> are numbered: "name #2"): renaming either makes it a
// new scenario.
//
//	{"version": 1, "scenarios": {"features/triage.feature": {"Urgent mail is flagged": {"passes": 18, "runs": 20}}}}
type Baseline struct {
	Version   int                                 `json:"version"`
	Scenarios map[string]map[string]BaselineEntry `json:"scenarios"`
	// Samples are each scenario's runs' spend and time, keyed as
	// Scenarios (baselinespend.go); a file without them compares pass
	// rates only.
	Samples map[string]map[string][]RunSample `json:"samples,omitempty"`
}

// BaselineEntry is one scenario's runs and passes.
type BaselineEntry struct {
	Passes int `json:"passes"`
	Runs   int `json:"runs"`
}

// baselineVersion is the version of the file's format.
const baselineVersion = 1

// maxBaselineSize caps the read of a baseline file.
const maxBaselineSize = 16 << 20

// maxBaselineRuns is the most runs a baseline may give a scenario: far
// more than any test run makes (a billion runs of a scenario), and small
// enough that the comparison's sums of runs cannot overflow.
const maxBaselineRuns = 1_000_000_000

// readBaseline reads a baseline file, or says clearly why it cannot.
func readBaseline(path string) (*Baseline, error) {
	data, err := readcap.ReadFile(path, maxBaselineSize)
	if err != nil {
		return nil, usagef("--baseline %s: %v", path, err)
	}
	var b Baseline
	if err := json.Unmarshal(data, &b); err != nil {
		return nil, usagef("--baseline %s is not a baseline file (JSON written by test --save-baseline): %v", path, err)
	}
	if b.Version != baselineVersion {
		return nil, usagef("--baseline %s: version %d, but this version of the test command reads version %d", path, b.Version, baselineVersion)
	}
	for f, scs := range b.Scenarios {
		for name, e := range scs {
			if e.Runs < 0 || e.Passes < 0 || e.Passes > e.Runs {
				return nil, usagef("--baseline %s: %s, %q: %d passes of %d runs is not possible", path, f, name, e.Passes, e.Runs)
			}
			if e.Runs > maxBaselineRuns {
				return nil, usagef("--baseline %s: %s, %q: %d runs is more than any test run makes (at most %d)", path, f, name, e.Runs, maxBaselineRuns)
			}
		}
	}
	if err := checkSamples(path, &b); err != nil {
		return nil, err
	}
	return &b, nil
}

// baselineOf is the baseline of the scenarios that ran.
func baselineOf(ts []*tracked) *Baseline {
	b := &Baseline{Version: baselineVersion, Scenarios: map[string]map[string]BaselineEntry{}}
	for _, t := range ts {
		if t.done() == 0 {
			continue
		}
		if b.Scenarios[t.path] == nil {
			b.Scenarios[t.path] = map[string]BaselineEntry{}
		}
		b.Scenarios[t.path][t.name] = BaselineEntry{Passes: t.passes, Runs: t.done()}
		if ss := samplesOf(t); len(ss) > 0 {
			if b.Samples == nil {
				b.Samples = map[string]map[string][]RunSample{}
			}
			if b.Samples[t.path] == nil {
				b.Samples[t.path] = map[string][]RunSample{}
			}
			b.Samples[t.path][t.name] = ss
		}
	}
	return b
}

// createBaseline creates the file --save-baseline writes: created before the
// runs, so that a path that cannot hold it is said before any money is
// spent, and written atomically (a temporary file beside it, renamed over
// it), so that a test run that fails to write it, or is killed, leaves an
// earlier baseline as it was.
func createBaseline(path string) (*report.File, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, usagef("--save-baseline %s: %v", path, err)
	}
	f, err := report.CreateFile(path)
	if err != nil {
		return nil, usagef("--save-baseline %s: %v", path, err)
	}
	return f, nil
}

// writeBaseline writes b to f, as indented JSON with sorted keys, so that
// a baseline kept in version control diffs well, and puts it in place.
func writeBaseline(f *report.File, path string, b *Baseline) error {
	data, err := json.MarshalIndent(b, "", "  ")
	if err == nil {
		_, err = f.Write(append(data, '\n'))
	}
	if err := f.Commit(err); err != nil {
		return usagef("--save-baseline %s: %v", path, err)
	}
	// The file is the team's, for version control: not private as a
	// report of conversations is. A device or a pipe (/dev/null) is not
	// ours to change.
	if fi, err := os.Lstat(path); err == nil && fi.Mode().IsRegular() {
		if err := os.Chmod(path, 0o644); err != nil {
			return usagef("--save-baseline %s: %v", path, err)
		}
	}
	return nil
}

// change is how a scenario's pass rate compares with the baseline's.
type change int

const (
	unchanged   change = iota // no change beyond chance
	regression                // it fell: Fisher's exact test, one-sided, p < 0.05
	improvement               // it rose, as clearly
	added                     // not in the baseline
	missing                   // in the baseline, not run now
	notRun                    // selected, but no run ended (the budget stopped the test run)
)

// significance is the p-value below which a change counts.
const significance = 0.05

// comparison is one scenario compared with the baseline.
type comparison struct {
	path, name string
	base       *BaselineEntry
	now        *BaselineEntry
	t          *tracked // nil when missing
	p          float64  // of the change's test; 1 when there is none
	change     change
	// spend compares the runs' tokens, cost, requests and latency with
	// the baseline's samples (baselinespend.go); nil without samples.
	spend *spendComparison
}

// compare compares the runs with the baseline b: every scenario that ran,
// then those of the baseline that did not, in the baseline's order (by
// path and name).
func compare(b *Baseline, ts []*tracked) []*comparison {
	var out []*comparison
	seen := map[[2]string]bool{}
	for _, t := range ts {
		seen[[2]string{t.path, t.name}] = true
		c := &comparison{path: t.path, name: t.name, t: t, p: 1}
		if e, ok := b.Scenarios[t.path][t.name]; ok {
			c.base = &e
		}
		if t.done() > 0 {
			c.now = &BaselineEntry{Passes: t.passes, Runs: t.done()}
		}
		switch {
		case c.now == nil:
			c.change = notRun
		case c.base == nil:
			c.change = added
		default:
			if p := fisherLess(c.base.Passes, c.base.Runs, c.now.Passes, c.now.Runs); p < significance {
				c.p, c.change = p, regression
			} else if p := fisherLess(c.now.Passes, c.now.Runs, c.base.Passes, c.base.Runs); p < significance {
				c.p, c.change = p, improvement
			} else {
				c.p = min(p, fisherLess(c.base.Passes, c.base.Runs, c.now.Passes, c.now.Runs))
			}
		}
		if ss, ok := b.Samples[t.path][t.name]; ok && t.done() > 0 {
			c.spend = compareSpend(ss, samplesOf(t))
		}
		out = append(out, c)
	}
	var rest []*comparison
	for path, scs := range b.Scenarios {
		for name, e := range scs {
			if !seen[[2]string{path, name}] {
				rest = append(rest, &comparison{path: path, name: name, base: &e, p: 1, change: missing})
			}
		}
	}
	slices.SortFunc(rest, func(a, b *comparison) int {
		return cmpStrings(a.path+"\x00"+a.name, b.path+"\x00"+b.name)
	})
	return append(out, rest...)
}

func cmpStrings(a, b string) int { return strings.Compare(a, b) }

// rate formats passes of runs as "9/10 (90%)".
func (e *BaselineEntry) rate() string {
	if e == nil {
		return "–"
	}
	return fmt.Sprintf("%d/%d (%s)", e.Passes, e.Runs, percent(float64(e.Passes)/float64(max(e.Runs, 1))))
}
