package bdd

import (
	"math"
	"testing"
)

// Wilson intervals against published values: Newcombe (1998), table I
// (81/263, 15/148 and the extremes), and 14/20, the example of the docs.
func TestWilson(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		passes, runs int
		lo, hi       float64
	}{
		{81, 263, 0.2553, 0.3662},
		{15, 148, 0.0624, 0.1605},
		{0, 20, 0, 0.1611},
		{1, 29, 0.0061, 0.1718},
		{14, 20, 0.4810, 0.8545},
		{10, 10, 0.7225, 1},
		{5, 10, 0.2366, 0.7634},
		{0, 0, 0, 1},
	} {
		lo, hi := wilson(tc.passes, tc.runs)
		if math.Abs(lo-tc.lo) > 5e-5 || math.Abs(hi-tc.hi) > 5e-5 {
			t.Errorf("wilson(%d, %d) = %.4f–%.4f, want %.4f–%.4f", tc.passes, tc.runs, lo, hi, tc.lo, tc.hi)
		}
	}
}

// Fisher's exact test, one-sided, against R's
// fisher.test(matrix(c(a, c, b, d), 2), alternative = "greater")$p.value
// (a, b: the baseline's passes and failures; c, d: now's).
func TestFisherLess(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		p1, n1, p2, n2 int
		want           float64
	}{
		{3, 4, 1, 4, 0.2428571}, // Fisher's lady tasting tea
		{10, 10, 5, 10, 0.01625387},
		{18, 20, 9, 20, 0.002867837},
		{20, 20, 20, 20, 1},
		{5, 10, 5, 10, 0.6718591},
		{9, 10, 2, 10, 0.002738747},
		{0, 10, 10, 10, 1},
		{45, 50, 30, 50, 0.0004834216},
		{0, 0, 3, 5, 1},
	} {
		got := fisherLess(tc.p1, tc.n1, tc.p2, tc.n2)
		if math.Abs(got-tc.want) > 1e-6*max(1, tc.want) {
			t.Errorf("fisherLess(%d/%d, %d/%d) = %.9g, want %.9g", tc.p1, tc.n1, tc.p2, tc.n2, got, tc.want)
		}
	}
}

func TestDecide(t *testing.T) {
	t.Parallel()
	// All passes never fail a pass rate of 1 early, whatever the rounding.
	for n := 1; n <= 1000; n++ {
		if lo, hi := wilson(n, n); hi != 1 || decide(n, n, n+1, 1, true) != undecided {
			t.Fatalf("%d/%d: interval %g–%g, %d", n, n, lo, hi, decide(n, n, n+1, 1, true))
		}
		if lo, _ := wilson(0, n); lo != 0 {
			t.Fatalf("0/%d: lower %g", n, lo)
		}
	}
	for _, tc := range []struct {
		passes, runs, max int
		need              float64
		early             bool
		want              verdict
	}{
		{5, 5, 20, 1, true, undecided},   // at 100% only the last run decides a pass
		{4, 5, 20, 1, true, failing},     // one failure fails it
		{10, 10, 20, 0.6, true, passing}, // 72–100% ≥ 60%
		{9, 10, 20, 0.6, true, undecided},
		{0, 5, 20, 0.6, true, failing}, // 0–43% < 60%
		{0, 5, 20, 0.6, false, undecided},
		{14, 20, 20, 0.6, true, passing}, // the observed rate at N
		{14, 20, 20, 0.7, true, passing},
		{13, 20, 20, 0.7, true, failing},
		{0, 1, 1, 0, true, passing},
		{0, 1, 20, 0.8, true, undecided}, // 0–79%, but one run says little
		{0, 4, 20, 0.8, true, undecided}, // 16 of the 16 left would still pass
		{0, 5, 20, 0.8, true, failing},   // 0 of 15 left could pass it
		{1, 5, 20, 0.8, true, failing},   // 16 still possible, but 4–62% is below
		{4, 5, 20, 0.8, true, undecided}, // 38–96%
		{0, 1, 20, 1, true, failing},     // at 100%, the first failure decides
		{3, 3, 5, 0.5, true, passing},    // 3 of 5 whatever comes after
		{3, 3, 5, 0.5, false, undecided}, // with baselines every run runs
		{12, 12, 20, 0.6, true, passing}, // 12 of 20 whatever comes after
		{3, 5, 5, 0.6, true, passing},    // the last run: the observed rate
		{2, 5, 5, 0.6, true, failing},
	} {
		if got := decide(tc.passes, tc.runs, tc.max, tc.need, tc.early); got != tc.want {
			t.Errorf("decide(%d/%d of %d, %g, early %v) = %d, want %d", tc.passes, tc.runs, tc.max, tc.need, tc.early, got, tc.want)
		}
	}
}
