package bdd

import (
	"math"
	"testing"
)

// The Mann-Whitney U test against scipy 1.10.1's
// scipy.stats.mannwhitneyu(x, y, alternative="greater", method=M).pvalue,
// M "exact" for the samples without ties of at most 25 values a side
// (the ones this computes exactly), "asymptotic" (normal, tie and
// continuity corrected) for the others.
func TestMannWhitneyGreater(t *testing.T) {
	t.Parallel()
	seq := func(n int, f func(i float64) float64) []float64 {
		var v []float64
		for i := range n {
			v = append(v, f(float64(i)))
		}
		return v
	}
	for _, tc := range []struct {
		name string
		x, y []float64
		want float64
	}{
		{"exact, overlapping", []float64{5, 6, 7, 8, 9}, []float64{1, 2, 3, 4, 10}, 0.07539682539682539},
		{"exact, all above", []float64{10, 11, 12, 13, 14}, []float64{1, 2, 3, 4, 5}, 0.003968253968253968},
		{"exact, all below", []float64{1, 2, 3, 4, 5}, []float64{10, 11, 12, 13, 14}, 1},
		{"exact, 6 against 5", []float64{3.1, 4.2, 5.5, 6.0, 7.7, 8.1}, []float64{1.0, 2.5, 3.0, 4.0, 5.0}, 0.015151515151515152},
		{"exact, 20 a side", seq(20, func(i float64) float64 { return i*1.3 + 0.17 }), seq(20, func(i float64) float64 { return i }), 0.10548216362406039},
		{"normal, ties", []float64{30, 30, 45, 45, 45}, []float64{30, 30, 30, 30, 30}, 0.03339903423756914},
		{"normal, ties, 12 a side", []float64{30, 31, 32, 33, 34, 35, 36, 37, 38, 39, 40, 41},
			[]float64{20, 22, 24, 26, 28, 30, 32, 34, 36, 38, 40, 42}, 0.06276396271551259},
		{"normal, ties, 7 against 6", []float64{100, 120, 130, 150, 160, 170, 180}, []float64{90, 95, 100, 110, 115, 120}, 0.009048063682611324},
		{"normal, 30 a side", seq(30, func(i float64) float64 { return i + 0.25 }), seq(30, func(i float64) float64 { return i*0.9 + 0.01 }), 0.2276484534515688},
		{"all equal", []float64{15, 15, 15, 15, 15}, []float64{15, 15, 15, 15, 15}, 1},
		{"empty", nil, []float64{1}, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if got := mannWhitneyGreater(tc.x, tc.y); math.Abs(got-tc.want) > 1e-9 {
				t.Errorf("p = %.12g, want %.12g", got, tc.want)
			}
		})
	}
}
