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
		{"plain", Usage{1, 10, 5}, Usage{1, 20, 7}, Usage{2, 30, 12}},
		{"negative", Usage{1, 10, 5}, Usage{1, -5, -100}, Usage{2, 10, 5}},
		{"negative total", Usage{0, -3, 0}, Usage{1, 2, 0}, Usage{1, 2, 0}},
		{"overflow", Usage{1, math.MaxInt - 1, 5}, Usage{1, 10, math.MaxInt}, Usage{2, math.MaxInt, math.MaxInt}},
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
