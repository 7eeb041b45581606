package bdd

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A third agent makes each run cost more tokens, requests and money:
// against a baseline of the two-agent ensemble, all three rise beyond
// chance (5 runs a side, every value tied: normal approximation, p =
// 0.002), a regression though every run passes; the baseline without
// samples compares pass rates only; too few runs are said, not compared.
func TestBaselineSpendRegression(t *testing.T) {
	t.Parallel()
	dir := writeTempFiles(t, map[string]string{"e.yaml": coinEnsemble, "a.feature": coinFeature("")})
	base := filepath.Join(dir, "base.json")
	run := func(repeat int, r Repeats, format string) repeatOutcome {
		m := newCoinModel(t, 1, 1)
		r.Repeat, r.Concurrency = repeat, 1
		return runRepeats(t, RunOptions{Options: liveOptions(m, true), Paths: []string{dir}, Repeats: r, Format: format})
	}
	if o := run(5, Repeats{SaveBaseline: base}, ""); o.code != ExitPassed {
		t.Fatalf("exit %d, %v:\n%s", o.code, o.err, o.out)
	}
	data, err := os.ReadFile(base)
	if err != nil {
		t.Fatal(err)
	}
	var b Baseline
	if err := json.Unmarshal(data, &b); err != nil {
		t.Fatal(err)
	}
	var ss []RunSample
	for _, scs := range b.Samples {
		ss = scs["says yes"]
	}
	if len(ss) != 5 || ss[0].Tokens != 30 || ss[0].Requests != 2 || ss[0].Cost <= 0 {
		t.Fatalf("samples:\n%s", data)
	}

	// The same ensemble: nothing rises.
	if o := run(5, Repeats{Baseline: base}, ""); o.code != ExitPassed || strings.Contains(o.out, "REGRESSION") ||
		!strings.Contains(o.out, "spend and latency of 1 scenario") {
		t.Fatalf("same ensemble: exit %d:\n%s", o.code, o.out)
	}

	more := coinEnsemble + `  - name: extra
    model_profile: m
    prompt: Draft more.
`
	if err := os.WriteFile(filepath.Join(dir, "e.yaml"), []byte(more), 0o644); err != nil {
		t.Fatal(err)
	}
	o := run(5, Repeats{Baseline: base}, "")
	for _, want := range []string{": says yes: tokens median 30 → 45 (Mann-Whitney U p = 0.002)", ": says yes: requests median 2 → 3 (Mann-Whitney U p = 0.002)",
		": says yes: cost median ", "0 regressions, 0 improvements, 1 unchanged"} {
		if !strings.Contains(o.out, want) {
			t.Errorf("the report lacks %q", want)
		}
	}
	if o.code != ExitFailed || strings.Count(o.out, "REGRESSION") != 3 {
		t.Fatalf("exit %d:\n%s", o.code, o.out)
	}
	md := run(5, Repeats{Baseline: base}, "markdown")
	if md.code != ExitFailed || !strings.Contains(md.out, "and **3 spend regressions**") || !strings.Contains(md.out, "| 🔴 regression | `") || !strings.Contains(md.out, "| tokens | 30 | 45 | 0.002 |") {
		t.Fatalf("markdown:\n%s", md.out)
	}

	// Too few runs on this side.
	if o := run(3, Repeats{Baseline: base}, ""); o.code != ExitPassed || !strings.Contains(o.out, "spend not compared ") ||
		!strings.Contains(o.out, "3 runs with samples now, 5 in the baseline (at least 5 a side)") {
		t.Fatalf("3 runs: exit %d:\n%s", o.code, o.out)
	}

	// A baseline of before samples: pass rates only.
	b.Samples = nil
	data, _ = json.Marshal(&b)
	if err := os.WriteFile(base, data, 0o644); err != nil {
		t.Fatal(err)
	}
	if o := run(5, Repeats{Baseline: base}, ""); o.code != ExitPassed || strings.Contains(o.out, "spend") || !strings.Contains(o.out, "1 unchanged") {
		t.Fatalf("old baseline: exit %d:\n%s", o.code, o.out)
	}
}

// Samples no run could make are refused, naming the file and scenario.
func TestBaselineBadSamplesRefused(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ name, samples, want string }{
		{"negative", `[{"tokens": -1, "requests": 1, "seconds": 1}]`, `sample 1 has a negative or not finite value`},
		{"more than runs", `[{"tokens": 1}, {"tokens": 1}, {"tokens": 1}]`, `3 samples of 2 runs is not possible`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			path := filepath.Join(t.TempDir(), "b.json")
			data := `{"version": 1, "scenarios": {"a.feature": {"s": {"passes": 1, "runs": 2}}}, "samples": {"a.feature": {"s": ` + tc.samples + `}}}`
			if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
				t.Fatal(err)
			}
			_, err := readBaseline(path)
			if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), `a.feature, "s"`) {
				t.Fatalf("%v, want %q", err, tc.want)
			}
		})
	}
}

// Each measure is compared on its own, a rise of latency reported but not
// failing; a cost of 0 on both sides (no pricing) is not compared.
func TestCompareSpend(t *testing.T) {
	t.Parallel()
	mk := func(tokens int, seconds float64, n int) []RunSample {
		var ss []RunSample
		for i := range n {
			ss = append(ss, RunSample{Tokens: tokens + i, Requests: 2, Seconds: seconds + float64(i)/100})
		}
		return ss
	}
	sc := compareSpend(mk(100, 1, 6), mk(100, 5, 6))
	got := map[string]change{}
	for _, m := range sc.metrics {
		got[m.name] = m.change
	}
	if len(got) != 3 || got["tokens"] != unchanged || got["requests"] != unchanged || got["latency"] != regression || sc.regressed() {
		t.Fatalf("%v, regressed %v", got, sc.regressed())
	}
	sc = compareSpend(mk(100, 1, 6), mk(50, 1, 6))
	for _, m := range sc.metrics {
		if m.name == "tokens" && (m.change != improvement || m.label() != "improvement") {
			t.Errorf("tokens 100 → 50: %v", m.change)
		}
	}
	if sc := compareSpend(mk(100, 1, 4), mk(200, 1, 9)); sc.enough() || len(sc.metrics) != 0 {
		t.Errorf("4 baseline runs compared")
	}
}
