package bdd

import (
	"math"
	"slices"
)

// exactMaxSize is the largest sample size of either side for which
// mannWhitneyGreater computes the exact p-value (when no value is tied):
// the exact distribution of U takes about n1·n2·(n1+n2) steps.
const exactMaxSize = 25

// mannWhitneyGreater is the one-sided p-value of the Mann-Whitney U test
// that the values of x tend to be greater than those of y (scipy's
// mannwhitneyu(x, y, alternative="greater")). Without ties and with both
// samples of at most exactMaxSize values, it is exact: the share of the
// C(n1+n2, n1) equally likely rankings whose U is at least the one
// observed. Otherwise it is the normal approximation with the tie
// correction of the variance and a continuity correction of 0.5 (scipy's
// method="asymptotic"). An empty sample, or values all equal, give 1.
func mannWhitneyGreater(x, y []float64) float64 {
	n1, n2 := len(x), len(y)
	if n1 == 0 || n2 == 0 {
		return 1
	}
	u, ties := uStatistic(x, y)
	if ties == 0 && n1 <= exactMaxSize && n2 <= exactMaxSize {
		return exactUGreater(n1, n2, u)
	}
	n := float64(n1 + n2)
	mean := float64(n1) * float64(n2) / 2
	variance := float64(n1) * float64(n2) / 12 * ((n + 1) - ties/(n*(n-1)))
	if variance <= 0 {
		return 1 // every value the same: no evidence either way
	}
	z := (u - mean - 0.5) / math.Sqrt(variance)
	return min(1, 0.5*math.Erfc(z/math.Sqrt2))
}

// uStatistic is U of x (the sum of x's ranks in both samples together,
// ties given their mean rank, less n1(n1+1)/2) and the sum of t³ - t over
// the groups of t tied values.
func uStatistic(x, y []float64) (u, ties float64) {
	type v struct {
		val   float64
		fromX bool
	}
	all := make([]v, 0, len(x)+len(y))
	for _, a := range x {
		all = append(all, v{a, true})
	}
	for _, b := range y {
		all = append(all, v{b, false})
	}
	slices.SortFunc(all, func(a, b v) int {
		switch {
		case a.val < b.val:
			return -1
		case a.val > b.val:
			return 1
		}
		return 0
	})
	rankSum := 0.0
	for i := 0; i < len(all); {
		j := i
		for j < len(all) && all[j].val == all[i].val {
			j++
		}
		rank := float64(i+j+1) / 2 // the mean of ranks i+1 … j
		for k := i; k < j; k++ {
			if all[k].fromX {
				rankSum += rank
			}
		}
		if t := float64(j - i); t > 1 {
			ties += t*t*t - t
		}
		i = j
	}
	n1 := float64(len(x))
	return rankSum - n1*(n1+1)/2, ties
}

// exactUGreater is P(U ≥ u) for samples of n1 and n2 values without ties,
// all rankings equally likely: the number of rankings with U = k is that
// of the partitions of k into at most n1 parts each at most n2, which the
// recurrence f(i, j, k) = f(i-1, j, k-j) + f(i, j-1, k) counts (the
// largest value from the first sample, or from the second).
func exactUGreater(n1, n2 int, u float64) float64 {
	maxU := n1 * n2
	// f[j][k] for the current i: rankings of i values of x and j of y
	// with U = k. Counts are floats: C(50, 25) fits exactly enough.
	prev := make([][]float64, n2+1)
	for j := range prev {
		prev[j] = make([]float64, maxU+1)
		prev[j][0] = 1 // i = 0: U is 0
	}
	for i := 1; i <= n1; i++ {
		cur := make([][]float64, n2+1)
		for j := 0; j <= n2; j++ {
			cur[j] = make([]float64, maxU+1)
			for k := 0; k <= i*j; k++ {
				if k-j >= 0 {
					cur[j][k] += prev[j][k-j] // x's value is the largest: above all j of y
				}
				if j > 0 {
					cur[j][k] += cur[j-1][k]
				}
			}
		}
		prev = cur
	}
	counts := prev[n2]
	total, above := 0.0, 0.0
	from := int(math.Ceil(u - 1e-9))
	for k, c := range counts {
		total += c
		if k >= from {
			above += c
		}
	}
	return above / total
}
