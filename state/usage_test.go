package state

import (
	"math"
	"testing"
)

// Usage counts come from model servers: Add ignores negative counts and
// saturates instead of overflowing.
func TestUsageAddClampsAndSaturates(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name     string
		from, in Usage
		want     Usage
	}{
		{"plain", Usage{1, 10, 5, 0}, Usage{1, 20, 7, 0}, Usage{2, 30, 12, 0}},
		{"negative", Usage{1, 10, 5, 0}, Usage{1, -5, -100, 0}, Usage{2, 10, 5, 0}},
		{"negative total", Usage{0, -3, 0, 0}, Usage{1, 2, 0, 0}, Usage{1, 2, 0, 0}},
		{"cost", Usage{1, 10, 5, 0.25}, Usage{1, 20, 7, 0.5}, Usage{2, 30, 12, 0.75}},
		{"overflow", Usage{1, math.MaxInt - 1, 5, 0}, Usage{1, 10, math.MaxInt, 0}, Usage{2, math.MaxInt, math.MaxInt, 0}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			u := tc.from
			u.Add(&tc.in)
			if u != tc.want {
				t.Errorf("got %+v, want %+v", u, tc.want)
			}
		})
	}
}
