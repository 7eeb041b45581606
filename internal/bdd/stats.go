package bdd

import "math"

// z95 is the standard normal quantile of a two-sided 95% interval.
const z95 = 1.959963984540054

// wilson returns the 95% Wilson score interval of a pass rate: passes out of
// runs. Unlike the normal approximation it stays inside [0, 1] and is
// sensible at 0 and at runs passes, which repeated scenarios hit often. With
// no runs it is [0, 1].
func wilson(passes, runs int) (lo, hi float64) {
	if runs <= 0 {
		return 0, 1
	}
	n := float64(runs)
	p := float64(passes) / n
	z2 := z95 * z95
	den := 1 + z2/n
	center := (p + z2/(2*n)) / den
	half := z95 * math.Sqrt(p*(1-p)/n+z2/(4*n*n)) / den
	lo, hi = max(0, center-half), min(1, center+half)
	// At the ends the interval touches 0 or 1 exactly, which rounding
	// would miss (1 - 1e-16 is below a pass rate of 1).
	if passes <= 0 {
		lo = 0
	}
	if passes >= runs {
		hi = 1
	}
	return lo, hi
}

// verdict is what a scenario's runs so far say about its pass rate.
type verdict int

const (
	undecided verdict = iota
	passing
	failing
)

// minEarlyRuns is how many runs a scenario has before its Wilson interval
// may stop it early: the interval of very few runs covers the true rate
// far less often than its 95% says (one failed run of one gives 0–79%,
// which would fail a model that passes 90% of the time, one CI run in ten).
const minEarlyRuns = 5

// decide is the verdict on passes out of runs against the pass rate need.
// At the last run (runs == max) the observed rate decides. Before it, when
// early: the verdict that the runs left cannot change (at a need of 1, the
// first failure); then, from minEarlyRuns runs on, passing when the 95%
// Wilson interval lies wholly at or above need, failing when wholly below;
// undecided otherwise, when the runs go on.
func decide(passes, runs, maxRuns int, need float64, early bool) verdict {
	if runs >= maxRuns {
		if rateMeets(passes, runs, need) {
			return passing
		}
		return failing
	}
	if !early || runs == 0 {
		return undecided
	}
	switch {
	case !rateMeets(passes+maxRuns-runs, maxRuns, need):
		return failing // even if every run left passed
	case rateMeets(passes, maxRuns, need):
		return passing // even if every run left failed
	case runs < minEarlyRuns:
		return undecided
	}
	lo, hi := wilson(passes, runs)
	switch {
	case lo >= need:
		return passing
	case hi < need:
		return failing
	}
	return undecided
}

// rateMeets reports whether passes out of runs is at least need, without
// the rounding of a float division deciding (7/10 meets 0.7).
func rateMeets(passes, runs int, need float64) bool {
	return float64(passes) >= need*float64(runs)-1e-9
}

// fisherLess is the one-sided p-value of Fisher's exact test that the pass
// rate of the second sample (passes2 of runs2) is lower than the first's
// (passes1 of runs1): the probability, with the margins of the 2×2 table
// fixed, of a first sample at least as much better as the one observed
// (R's fisher.test(matrix(c(passes1, passes2, fails1, fails2), 2),
// alternative = "greater")). Swap the samples for a rise.
func fisherLess(passes1, runs1, passes2, runs2 int) float64 {
	if runs1 <= 0 || runs2 <= 0 {
		return 1
	}
	total := runs1 + runs2
	allPasses := passes1 + passes2
	// P(X = x) for X the first sample's passes: hypergeometric.
	logP := func(x int) float64 {
		return logChoose(allPasses, x) + logChoose(total-allPasses, runs1-x) - logChoose(total, runs1)
	}
	hiX := min(allPasses, runs1)
	// The tables possible have at most total-allPasses failures in the
	// first sample; past the distribution's mode its terms only fall, and
	// once they are too small to change the sum the rest is left out, so
	// that large counts take few steps.
	lo := max(passes1, runs1-(total-allPasses))
	mode := math.Floor((float64(runs1) + 1) * (float64(allPasses) + 1) / (float64(total) + 2))
	p := 0.0
	for x := lo; x <= hiX; x++ {
		term := math.Exp(logP(x))
		p += term
		if float64(x) > mode && term <= p*1e-17 {
			break
		}
	}
	return min(1, p)
}

// logChoose is log(n choose k), through log-factorials.
func logChoose(n, k int) float64 {
	if k < 0 || k > n {
		return math.Inf(-1)
	}
	return logFactorial(n) - logFactorial(k) - logFactorial(n-k)
}

func logFactorial(n int) float64 {
	v, _ := math.Lgamma(float64(n) + 1)
	return v
}
