package bdd

import (
	"bytes"
	"encoding/json"
	"encoding/xml"
	"math/rand/v2"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/ensemble-run/ensemble/internal/fakemodel"
)

// coinModel is a model server of the OpenAI wire format that answers a
// system prompt starting with COIN "yes" with probability p and "no"
// otherwise, from a seeded generator: run one request at a time, its
// answers are random but the same for the seed. Any other prompt gets
// "draft". Each reply costs 10 input and 5 output tokens.
type coinModel struct {
	srv      *fakemodel.Server
	mu       sync.Mutex
	rng      *rand.Rand
	p        float64
	requests atomic.Int64
	// pattern, when set, answers the COIN requests in turn instead of at
	// random: true is "yes".
	pattern []bool
	tosses  int
}

func newCoinModel(t testing.TB, p float64, seed uint64) *coinModel {
	m := &coinModel{rng: rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)), p: p}
	m.srv = fakemodel.New(t, m.reply, fakemodel.WithUsage(10, 5))
	return m
}

func (m *coinModel) reply(r fakemodel.Request) fakemodel.Reply {
	m.requests.Add(1)
	if r.Body == nil {
		return fakemodel.Reply{Status: http.StatusBadRequest, Error: "bad request"}
	}
	if !strings.HasPrefix(r.System, "COIN") {
		return fakemodel.Reply{Text: "draft"}
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	yes := m.rng.Float64() < m.p
	if m.pattern != nil {
		yes = m.pattern[m.tosses%len(m.pattern)]
	}
	m.tosses++
	if yes {
		return fakemodel.Reply{Text: "yes"}
	}
	return fakemodel.Reply{Text: "no"}
}

// coinEnsemble drafts, then tosses the coin: the answer's history departs
// at turn 2.
const coinEnsemble = `name: coin
models:
  m:
    provider: openai
    model: coin
    base_url: ${TEST_LLM_URL}
    pricing: {input_per_million: 100, output_per_million: 200}
agents:
  - name: draft
    model_profile: m
    prompt: Draft something.
  - name: answer
    model_profile: m
    prompt: COIN. Answer yes or no.
    dependencies: [draft]
`

// coinFeature's scenario passes when the coin says yes.
func coinFeature(tags string) string {
	return tags + `
Feature: coin
  Scenario: says yes
    Given the ensemble "e.yaml"
    When the ensemble runs
    Then the output of agent "answer" is "yes"
`
}

// writeTempFiles writes files into a new folder and returns it.
func writeTempFiles(t testing.TB, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	writeFiles(t, dir, files)
	return dir
}

// liveOptions are the steps' options of `test --live-all` against m: the
// runs' sessions build the runners that reach it, as in `ensemble test`.
func liveOptions(m *coinModel, liveAll bool, live ...string) Options {
	env := map[string]string{"TEST_LLM_URL": m.srv.URL()}
	lookup := func(k string) (string, bool) { v, ok := env[k]; return v, ok }
	return Options{LookupEnv: lookup, Models: true, GuardModels: true, Live: live, LiveAll: liveAll}
}

type repeatOutcome struct {
	code   int
	err    error
	out    string
	stderr string
}

func runRepeats(t testing.TB, o RunOptions) repeatOutcome {
	t.Helper()
	var out, stderr bytes.Buffer
	o.Output, o.Stderr, o.NoColors = &out, &stderr, true
	if o.Format == "" {
		o.Format = "progress"
	}
	code, err := Run(o)
	return repeatOutcome{code, err, out.String(), stderr.String()}
}

func rate(p float64) *float64 { return &p }

var countsLine = regexp.MustCompile(`(\d+)/(\d+) passed \((\d+)%, 95% CI (\d+)–(\d+)%\), needs ([0-9.]+)%`)

// counts reads the passes and runs of the report's first scenario.
func counts(t testing.TB, report string) (passes, runs int) {
	t.Helper()
	m := countsLine.FindStringSubmatch(report)
	if m == nil {
		t.Fatalf("no counts in the report:\n%s", report)
	}
	passes, _ = strconv.Atoi(m[1])
	runs, _ = strconv.Atoi(m[2])
	return passes, runs
}

// A scenario stops as soon as its verdict is clear: a model that says yes
// 95% of the time clearly meets 30%; one that says yes 5% of the time
// clearly misses 70%. Both stop well before their 40 runs, and say how
// many they saved.
func TestRepeatStopsEarlyOnAClearVerdict(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name     string
		p, need  float64
		wantCode int
		verdict  string
	}{
		{"clear pass", 0.95, 0.3, ExitPassed, "passed: stopped early"},
		{"clear fail", 0.05, 0.7, ExitFailed, "FAILED: stopped early"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			m := newCoinModel(t, tc.p, 7)
			dir := writeTempFiles(t, map[string]string{"e.yaml": coinEnsemble, "a.feature": coinFeature("")})
			o := runRepeats(t, RunOptions{Options: liveOptions(m, true), Paths: []string{dir},
				Repeats: Repeats{Repeat: 40, Concurrency: 1, PassRate: rate(tc.need)}})
			if o.code != tc.wantCode || o.err != nil {
				t.Fatalf("exit %d, %v:\n%s", o.code, o.err, o.out)
			}
			passes, runs := counts(t, o.out)
			if runs >= 40 || runs < 2 || !strings.Contains(o.out, tc.verdict) || !strings.Contains(o.out, strconv.Itoa(40-runs)+" of 40 runs saved") {
				t.Fatalf("%d/%d runs:\n%s", passes, runs, o.out)
			}
			if got := m.requests.Load(); got != int64(2*runs) {
				t.Errorf("%d model requests for %d runs of 2 requests", got, runs)
			}
			if !strings.Contains(o.out, "needs "+needPercent(tc.need)) {
				t.Errorf("the report does not say what it needs:\n%s", o.out)
			}
		})
	}
}

// A scenario whose verdict stays unclear runs its N, and the observed
// rate decides; a failure at pass rate 1 stops it at once.
func TestRepeatRunsToNWhenUnclear(t *testing.T) {
	t.Parallel()
	// Yes, no, yes, no, yes against 60% of 5: after 4 runs (2 of 4) both
	// verdicts are still possible, and fewer than 5 runs never stop on
	// their interval; the fifth decides, 3/5 meets 60%.
	m := newCoinModel(t, 0.5, 3)
	m.pattern = []bool{true, false}
	dir := writeTempFiles(t, map[string]string{"e.yaml": coinEnsemble, "a.feature": coinFeature("")})
	o := runRepeats(t, RunOptions{Options: liveOptions(m, true), Paths: []string{dir},
		Repeats: Repeats{Repeat: 5, Concurrency: 1, PassRate: rate(0.6)}})
	if passes, runs := counts(t, o.out); passes != 3 || runs != 5 || o.code != ExitPassed || strings.Contains(o.out, "saved") {
		t.Fatalf("%d/%d, exit %d:\n%s", passes, runs, o.code, o.out)
	}

	m = newCoinModel(t, 0.5, 3)
	o = runRepeats(t, RunOptions{Options: liveOptions(m, true), Paths: []string{dir}, Repeats: Repeats{Repeat: 30, Concurrency: 1}})
	passes, runs := counts(t, o.out)
	if o.code != ExitFailed || passes != runs-1 || runs >= 30 {
		t.Fatalf("at pass rate 1: %d/%d, exit %d:\n%s", passes, runs, o.code, o.out)
	}
}

// One failed run does not fail a scenario that needs 80% of 20: the
// interval of so few runs says little (0/1 gives 0–79%), and 16 of 20 can
// still pass. The first five runs go on whatever they give.
func TestRepeatDoesNotStopOnTooFewRuns(t *testing.T) {
	t.Parallel()
	m := newCoinModel(t, 0.5, 3)
	m.pattern = append([]bool{false}, slices.Repeat([]bool{true}, 19)...)
	dir := writeTempFiles(t, map[string]string{"e.yaml": coinEnsemble, "a.feature": coinFeature("")})
	o := runRepeats(t, RunOptions{Options: liveOptions(m, true), Paths: []string{dir},
		Repeats: Repeats{Repeat: 20, Concurrency: 1, PassRate: rate(0.8)}})
	passes, runs := counts(t, o.out)
	if o.code != ExitPassed || runs < 5 || passes != runs-1 {
		t.Fatalf("%d/%d, exit %d:\n%s", passes, runs, o.code, o.out)
	}
}

// @repeat(N) and @pass-rate(P) override the flags, per scenario, and make
// a run without repeat flags one with repeats; the feature's tags apply to
// its scenarios, a scenario's own win.
func TestRepeatTagsOverrideFlags(t *testing.T) {
	t.Parallel()
	m := newCoinModel(t, 1, 1)
	feature := `@repeat(3)
Feature: coin
  Scenario: from the feature
    Given the ensemble "e.yaml"
    When the ensemble runs
    Then the output of agent "answer" is "yes"

  @repeat(5) @pass-rate(0.5)
  Scenario: its own
    Given the ensemble "e.yaml"
    When the ensemble runs
    Then the output of agent "answer" is "yes"
`
	dir := writeTempFiles(t, map[string]string{"e.yaml": coinEnsemble, "a.feature": feature})
	o := runRepeats(t, RunOptions{Options: liveOptions(m, true), Paths: []string{dir}, Repeats: Repeats{Concurrency: 2}})
	if o.code != ExitPassed {
		t.Fatalf("exit %d, %v:\n%s", o.code, o.err, o.out)
	}
	// 3 runs at 100%; at 50% of 5, 3 passes decide whatever comes after.
	for _, want := range []string{"3/3 passed (100%, 95% CI 44–100%), needs 100%: passed\n",
		"3/3 passed (100%, 95% CI 44–100%), needs 50%: passed: stopped early, 2 of 5 runs saved"} {
		if !strings.Contains(o.out, want) {
			t.Errorf("no %q in:\n%s", want, o.out)
		}
	}
	// The flags do not override a tag.
	o = runRepeats(t, RunOptions{Options: liveOptions(m, true), Paths: []string{dir}, Repeats: Repeats{Repeat: 2, PassRate: rate(0.9), Concurrency: 2}})
	if !strings.Contains(o.out, "3/3 passed") || !strings.Contains(o.out, "needs 50%") {
		t.Errorf("flags overrode tags:\n%s", o.out)
	}
}

// Bad values are usage errors naming the flag, or the tag's file:line.
func TestRepeatBadValues(t *testing.T) {
	t.Parallel()
	dir := writeTempFiles(t, map[string]string{"e.yaml": coinEnsemble, "ok.feature": coinFeature(""),
		"bad/a.feature": coinFeature("@repeat(0)"), "bad/b.feature": "\n" + coinFeature("@pass-rate(1.5) @repeat(x)")})
	for _, tc := range []struct {
		name  string
		paths []string
		r     Repeats
		want  []string
	}{
		{"repeat", []string{dir + "/ok.feature"}, Repeats{Repeat: -1}, []string{"--repeat must be at least 1"}},
		{"pass rate", []string{dir + "/ok.feature"}, Repeats{PassRate: rate(1.2)}, []string{"--pass-rate must be a share from 0 to 1"}},
		{"concurrency", []string{dir + "/ok.feature"}, Repeats{Concurrency: -2}, []string{"--concurrency must be at least 1"}},
		{"tags", []string{dir + "/bad"}, Repeats{}, []string{
			filepath.Join(dir, "bad/a.feature") + ":1: tag @repeat(0): write @repeat(N)",
			filepath.Join(dir, "bad/b.feature") + ":2: tag @pass-rate(1.5): write @pass-rate(P)",
			filepath.Join(dir, "bad/b.feature") + ":2: tag @repeat(x)"}},
		{"baseline", []string{dir + "/ok.feature"}, Repeats{Baseline: filepath.Join(dir, "none.json")}, []string{"--baseline " + filepath.Join(dir, "none.json")}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			o := runRepeats(t, RunOptions{Paths: tc.paths, Repeats: tc.r})
			if o.code != ExitUsage || o.err == nil {
				t.Fatalf("exit %d, %v", o.code, o.err)
			}
			for _, w := range tc.want {
				if !strings.Contains(o.err.Error(), w) {
					t.Errorf("error %q lacks %q", o.err, w)
				}
			}
		})
	}
}

// Without --live or --live-all, an LLM agent without injected replies is
// refused, with repeats too; --live names the agents that may call.
func TestLiveAgents(t *testing.T) {
	t.Parallel()
	feature := strings.Replace(coinFeature(""), "    Then", "    Then the run has no errors\n    And", 1)
	dir := writeTempFiles(t, map[string]string{"e.yaml": coinEnsemble, "a.feature": feature})
	for _, tc := range []struct {
		name     string
		live     []string
		liveAll  bool
		repeat   int
		code     int
		requests int64
		want     string
		warn     string // on stderr
	}{
		{"none", nil, false, 1, ExitFailed, 0, `agent "draft" has no injected response and would call the real model`, ""},
		{"none, repeated", nil, false, 3, ExitFailed, 0, `agent "draft" has no injected response and would call the real model`, ""},
		{"one of two", []string{"draft"}, false, 1, ExitFailed, 1, `agent "answer" has no injected response`, ""},
		{"both", []string{"draft", "answer"}, false, 1, ExitPassed, 2, "", ""},
		{"all", nil, true, 2, ExitPassed, 4, "2/2 passed", ""},
		{"a typo", []string{"draft", "answer", "answr"}, false, 1, ExitPassed, 2, "", `warning: --live answr: no scenario that ran has an agent or a judge of that name; did you mean "answer"?`},
		{"a typo, repeated", []string{"draft", "answer", "answr"}, false, 2, ExitPassed, 4, "2/2 passed", "warning: --live answr:"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			m := newCoinModel(t, 1, 1)
			o := runRepeats(t, RunOptions{Options: liveOptions(m, tc.liveAll, tc.live...), Paths: []string{dir}, Repeats: Repeats{Repeat: tc.repeat}})
			if o.code != tc.code || m.requests.Load() != tc.requests || !strings.Contains(o.out, tc.want) {
				t.Fatalf("exit %d, %d requests:\n%s", o.code, m.requests.Load(), o.out)
			}
			if tc.warn == "" && strings.Contains(o.stderr, "warning") || !strings.Contains(o.stderr, tc.warn) {
				t.Fatalf("stderr %q, want %q", o.stderr, tc.warn)
			}
		})
	}
}

// JUnit and Cucumber reports of a run with repeats carry the counts.
func TestRepeatReportsCarryCounts(t *testing.T) {
	t.Parallel()
	m := newCoinModel(t, 0, 1)
	dir := writeTempFiles(t, map[string]string{"e.yaml": coinEnsemble, "a.feature": coinFeature("")})
	junitFile, cukeFile := filepath.Join(dir, "r/j.xml"), filepath.Join(dir, "r/c.json")
	o := runRepeats(t, RunOptions{Options: liveOptions(m, true), Paths: []string{dir}, Format: "junit:" + junitFile + ",cucumber:" + cukeFile + ",progress",
		Repeats: Repeats{Repeat: 10, PassRate: rate(0.5), Concurrency: 1}})
	if o.code != ExitFailed {
		t.Fatalf("exit %d:\n%s", o.code, o.out)
	}
	data, err := os.ReadFile(junitFile)
	if err != nil {
		t.Fatal(err)
	}
	var j struct {
		Tests    int `xml:"tests,attr"`
		Failures int `xml:"failures,attr"`
		Suites   []struct {
			Cases []struct {
				Name      string `xml:"name,attr"`
				SystemOut string `xml:"system-out"`
				Failure   *struct {
					Message string `xml:"message,attr"`
				} `xml:"failure"`
			} `xml:"testcase"`
		} `xml:"testsuite"`
	}
	if err := xml.Unmarshal(data, &j); err != nil {
		t.Fatal(err)
	}
	c := j.Suites[0].Cases[0]
	// 0/5: the interval 0–43% is below 50%.
	if j.Tests != 1 || j.Failures != 1 || c.Failure == nil || !strings.Contains(c.Failure.Message, "0/5 passed (0%, 95% CI 0–43%), needs 50%") ||
		!strings.Contains(c.SystemOut, "0/5 passed") || !strings.Contains(c.Failure.Message, `Then the output of agent "answer" is "yes"`) {
		t.Fatalf("JUnit:\n%s", data)
	}
	if xmllint, err := exec.LookPath("xmllint"); err == nil {
		if out, err := exec.Command(xmllint, "--noout", "--schema", filepath.Join("testdata", "junit-10.xsd"), junitFile).CombinedOutput(); err != nil {
			t.Errorf("xmllint: %v\n%s", err, out)
		}
	}
	data, err = os.ReadFile(cukeFile)
	if err != nil {
		t.Fatal(err)
	}
	var cuke []struct {
		Elements []struct {
			Name        string `json:"name"`
			Description string `json:"description"`
			Passes      int    `json:"passes"`
			Runs        int    `json:"runs"`
			Steps       []struct {
				Result struct{ Status string } `json:"result"`
			} `json:"steps"`
		} `json:"elements"`
	}
	if err := json.Unmarshal(data, &cuke); err != nil {
		t.Fatal(err)
	}
	e := cuke[0].Elements[0]
	if e.Name != "says yes" || e.Passes != 0 || e.Runs != 5 || !strings.Contains(e.Description, "0/5 passed") ||
		len(e.Steps) != 3 || e.Steps[2].Result.Status != "failed" {
		t.Fatalf("Cucumber:\n%s", data)
	}
}

// --save-baseline writes every scenario's full runs; --baseline compares: a
// model that got worse is a regression (exit 1, both rates named), one
// that got better an improvement, a new scenario and a missing one are
// said; --format markdown makes a table of it.
func TestBaselineRegressionAndImprovement(t *testing.T) {
	t.Parallel()
	feature := `Feature: coin
  Scenario: new one
    Given the ensemble "e.yaml"
    When the ensemble runs
    Then the output of agent "draft" is "draft"
`
	dir := writeTempFiles(t, map[string]string{"e.yaml": coinEnsemble, "a.feature": coinFeature(""), "b/b.feature": feature, "b/e.yaml": coinEnsemble})
	base := filepath.Join(dir, "out/base.json")
	run := func(p float64, files []string, r Repeats, format string) repeatOutcome {
		m := newCoinModel(t, p, 11)
		r.Repeat, r.Concurrency, r.PassRate = 20, 1, rate(0.1)
		return runRepeats(t, RunOptions{Options: liveOptions(m, true), Paths: files, Repeats: r, Format: format})
	}
	// The baseline: a good model (95%), every run made (no early stop at
	// a pass rate that 20/20 would clear after 2 runs).
	o := run(0.95, []string{filepath.Join(dir, "a.feature")}, Repeats{SaveBaseline: base}, "")
	if o.code != ExitPassed || strings.Contains(o.out, "saved") {
		t.Fatalf("exit %d:\n%s", o.code, o.out)
	}
	var b Baseline
	data, err := os.ReadFile(base)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(data, &b); err != nil {
		t.Fatal(err)
	}
	var key string
	for k := range b.Scenarios {
		key = k
	}
	e := b.Scenarios[key]["says yes"]
	if b.Version != 1 || len(b.Scenarios) != 1 || !strings.HasSuffix(key, "/a.feature") || e.Runs != 20 || e.Passes < 17 {
		t.Fatalf("baseline:\n%s", data)
	}
	basePasses := e.Passes

	// A worse model: a regression, though every scenario meets its 10%.
	o = run(0.3, []string{dir}, Repeats{Baseline: base}, "progress")
	passes, runs := counts(t, o.out)
	if o.code != ExitFailed || runs != 20 || !strings.Contains(o.out, "REGRESSION "+key+": says yes: "+strconv.Itoa(passes)+"/20") ||
		!strings.Contains(o.out, "was "+strconv.Itoa(basePasses)+"/20") || !strings.Contains(o.out, "new "+strings.TrimSuffix(key, "a.feature")+"b/b.feature: new one: 20/20") {
		t.Fatalf("exit %d:\n%s", o.code, o.out)
	}
	md := run(0.3, []string{dir}, Repeats{Baseline: base}, "markdown")
	if md.code != ExitFailed || !strings.HasPrefix(md.out, "**1 regression**, 0 improvements, 0 unchanged, 1 new, 0 missing") ||
		!regexp.MustCompile("(?m)^\\| 🔴 regression \\| `[^`]*a.feature` says yes \\| "+strconv.Itoa(basePasses)+"/20 \\(\\d+%\\) \\| \\d+/20 \\(\\d+%, CI \\d+–\\d+%\\) \\| (< 0\\.001|0\\.\\d+) \\| passed \\|$").MatchString(md.out) ||
		!strings.Contains(md.out, "| 🆕 new | `") {
		t.Fatalf("markdown:\n%s", md.out)
	}

	// A worse baseline, then the good model again: an improvement, and the
	// scenario of the baseline that did not run is missing.
	o = run(0.3, []string{dir}, Repeats{SaveBaseline: base}, "")
	if o.code != ExitPassed {
		t.Fatalf("exit %d:\n%s", o.code, o.out)
	}
	o = run(0.95, []string{filepath.Join(dir, "a.feature")}, Repeats{Baseline: base}, "")
	if o.code != ExitPassed || !strings.Contains(o.out, "improvement "+key+": says yes") ||
		!strings.Contains(o.out, "missing "+strings.TrimSuffix(key, "a.feature")+"b/b.feature: new one: in the baseline (20/20 (100%)), not run") ||
		!strings.Contains(o.out, "0 regressions, 1 improvement, 0 unchanged, 0 new, 1 missing") {
		t.Fatalf("exit %d:\n%s", o.code, o.out)
	}
}

// A flaky scenario's report names the first turn where a failing run
// departs from a passing one: the coin's answer at turn 2, after the same
// draft.
func TestFlakeNamesTheDepartingTurn(t *testing.T) {
	t.Parallel()
	m := newCoinModel(t, 0.5, 5)
	dir := writeTempFiles(t, map[string]string{"e.yaml": coinEnsemble, "a.feature": coinFeature("")})
	o := runRepeats(t, RunOptions{Options: liveOptions(m, true), Paths: []string{dir}, Repeats: Repeats{Repeat: 12, Concurrency: 1, PassRate: rate(0.5)}})
	passes, runs := counts(t, o.out)
	if passes == 0 || passes == runs {
		t.Fatalf("the seed gave no flaky scenario: %d/%d", passes, runs)
	}
	re := regexp.MustCompile(`flaky: failing run \d+ departs from passing run \d+ at turn 2: agent "answer", execution 1, gave a different output\n  +passing: "yes"\n  +failing: "no"\n`)
	if !re.MatchString(o.out) {
		t.Fatalf("no explanation of the flake:\n%s", o.out)
	}
	// A scenario that always passes is not flaky.
	m = newCoinModel(t, 1, 5)
	o = runRepeats(t, RunOptions{Options: liveOptions(m, true), Paths: []string{dir}, Repeats: Repeats{Repeat: 3}})
	if o.code != ExitPassed || strings.Contains(o.out, "flaky") {
		t.Fatalf("exit %d:\n%s", o.code, o.out)
	}
}

func TestShortDiff(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ a, b, wa, wb string }{
		{`"yes"`, `"no"`, `"yes"`, `"no"`},
		{strings.Repeat("x", 100) + "A" + strings.Repeat("y", 100), strings.Repeat("x", 100) + "B",
			"…" + strings.Repeat("x", 20) + "A" + strings.Repeat("y", 39) + "…", "…" + strings.Repeat("x", 20) + "B"},
	} {
		a, b := shortDiff(tc.a, tc.b)
		if a != tc.wa || b != tc.wb {
			t.Errorf("shortDiff(%q, %q) = %q, %q; want %q, %q", tc.a, tc.b, a, b, tc.wa, tc.wb)
		}
	}
}

// --max-requests and --max-cost stop starting runs once the runs so far
// reach them, say so, and exit 6; the scenarios left are not finished.
func TestSpendGuardsStopTheTestRun(t *testing.T) {
	t.Parallel()
	// Each run makes 2 requests; each request costs 10×0.1 + 5×0.2 = 0.002.
	for _, tc := range []struct {
		name string
		r    Repeats
		want string
		runs int
	}{
		{"requests", Repeats{MaxRequests: 6}, "stopped starting runs: --max-requests 6 reached (6 model requests made)", 3},
		{"cost", Repeats{MaxCost: 0.01}, "stopped starting runs: --max-cost 0.01 reached (0.012 spent)", 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			m := newCoinModel(t, 1, 1)
			dir := writeTempFiles(t, map[string]string{"e.yaml": coinEnsemble, "a.feature": coinFeature("")})
			tc.r.Repeat, tc.r.Concurrency = 10, 1
			o := runRepeats(t, RunOptions{Options: liveOptions(m, true), Paths: []string{dir}, Repeats: tc.r})
			_, runs := counts(t, o.out)
			if o.code != ExitBudget || runs != tc.runs || !strings.Contains(o.out, tc.want) || !strings.Contains(o.out, "not finished") {
				t.Fatalf("exit %d, %d runs:\n%s", o.code, runs, o.out)
			}
		})
	}
}

// Each row of a scenario outline is a scenario of its own: run on its own
// (the other rows skipped), counted on its own, named by its values.
func TestRepeatOutlineRows(t *testing.T) {
	t.Parallel()
	feature := `Feature: rows
  @repeat(3)
  Scenario Outline: answers <reply>
    Given the ensemble "e.yaml"
    And agent "draft" responds "d"
    And agent "answer" responds "<reply>"
    When the ensemble runs
    Then the output of agent "answer" is "yes"

    Examples:
      | reply |
      | yes   |
      | no    |
`
	dir := writeTempFiles(t, map[string]string{"e.yaml": coinEnsemble, "a.feature": feature})
	lookup := func(k string) (string, bool) { return "http://127.0.0.1:1/v1", k == "TEST_LLM_URL" }
	o := runRepeats(t, RunOptions{Options: Options{GuardModels: true, LookupEnv: lookup}, Paths: []string{dir}})
	if o.code != ExitFailed || !strings.Contains(o.out, "Scenario Outline answers yes\n  3/3 passed") ||
		!strings.Contains(o.out, "Scenario Outline answers no\n  0/1 passed (0%, 95% CI 0–79%), needs 100%: FAILED: stopped early, 2 of 3 runs saved") {
		t.Fatalf("exit %d:\n%s", o.code, o.out)
	}
}

// test --record-missing makes a scenario's recording from the models it
// lets through, one run at a time (the later runs replay what the first
// recorded); then the scenario replays offline, and without --live it
// still may not reach a model.
func TestRecordMissingMakesARecording(t *testing.T) {
	t.Parallel()
	feature := strings.Replace(coinFeature(""), "    Then", "    Then the run has no errors\n    And", 1)
	feature = strings.Replace(feature, `    Given the ensemble "e.yaml"`, `    Given the ensemble "e.yaml"
    And the recording "rec"`, 1)
	dir := writeTempFiles(t, map[string]string{"e.yaml": coinEnsemble, "a.feature": feature})
	m := newCoinModel(t, 1, 1)

	guarded := liveOptions(m, false)
	guarded.RecordMissing = true
	o := runRepeats(t, RunOptions{Options: guarded, Paths: []string{dir}})
	if o.code != ExitFailed || m.requests.Load() != 0 || !strings.Contains(o.out, `agent "draft" has no injected response and would call the real model`) {
		t.Fatalf("without --live: exit %d, %d requests:\n%s", o.code, m.requests.Load(), o.out)
	}

	live := liveOptions(m, true)
	live.RecordMissing = true
	o = runRepeats(t, RunOptions{Options: live, Paths: []string{dir}, Repeats: Repeats{Repeat: 3, Concurrency: 3}})
	// One recording per run (recording_repeat_test.go): 3 runs of 2
	// requests each.
	if o.code != ExitPassed || m.requests.Load() != 6 || !strings.Contains(o.out, "3/3 passed") {
		t.Fatalf("recording: exit %d, %d requests (want 3 runs of 2):\n%s", o.code, m.requests.Load(), o.out)
	}
	for _, agent := range []string{"draft", "answer"} {
		if _, err := os.Stat(filepath.Join(dir, "rec", "run-1", agent+".yaml")); err != nil {
			t.Fatalf("the recording lacks %s: %v", agent, err)
		}
	}

	o = runRepeats(t, RunOptions{Options: liveOptions(m, false), Paths: []string{dir}})
	if o.code != ExitPassed || m.requests.Load() != 6 {
		t.Fatalf("replaying: exit %d, %d requests:\n%s", o.code, m.requests.Load(), o.out)
	}
}

// A baseline that cannot be written is said before any run spends money
// (as a report file's is); one that can is written whole, with nothing
// left beside it, readable by the team.
func TestSaveBaselineCheckedBeforeTheRuns(t *testing.T) {
	t.Parallel()
	m := newCoinModel(t, 1, 1)
	dir := writeTempFiles(t, map[string]string{"e.yaml": coinEnsemble, "a.feature": coinFeature(""), "taken": "a file"})
	bad := filepath.Join(dir, "taken", "base.json")
	o := runRepeats(t, RunOptions{Options: liveOptions(m, true), Paths: []string{dir}, Repeats: Repeats{Repeat: 3, SaveBaseline: bad}})
	if o.code != ExitUsage || o.err == nil || !strings.Contains(o.err.Error(), "--save-baseline "+bad) || m.requests.Load() != 0 {
		t.Fatalf("exit %d, %v, %d model requests, want exit 2 naming the file before any request", o.code, o.err, m.requests.Load())
	}
	good := filepath.Join(dir, "base", "line.json")
	o = runRepeats(t, RunOptions{Options: liveOptions(m, true), Paths: []string{dir}, Repeats: Repeats{Repeat: 3, SaveBaseline: good}})
	if o.code != ExitPassed {
		t.Fatalf("exit %d, %v\n%s", o.code, o.err, o.out)
	}
	b, err := readBaseline(good)
	if err != nil {
		t.Fatal(err)
	}
	for _, scs := range b.Scenarios {
		if e := scs["says yes"]; len(b.Scenarios) != 1 || e.Runs != 3 || e.Passes != 3 {
			t.Errorf("the baseline: %+v", b.Scenarios)
		}
	}
	entries, _ := os.ReadDir(filepath.Dir(good))
	if fi, err := os.Stat(good); len(entries) != 1 || err != nil || fi.Mode().Perm() != 0o644 {
		t.Errorf("the baseline's folder holds %d files (want 1), its mode %v", len(entries), fi.Mode())
	}
}
