package engine

import (
	"math"
	"testing"
	"time"
)

// The wait doubles after each failed attempt, but never overflows into a
// negative duration, which would end every later wait at once.
func TestNextRetryWait(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ in, want time.Duration }{
		{time.Second, 2 * time.Second},
		{250 * time.Millisecond, 500 * time.Millisecond},
		{math.MaxInt64/2 + 1, math.MaxInt64},
		{math.MaxInt64, math.MaxInt64},
	} {
		if got := nextRetryWait(c.in); got != c.want {
			t.Errorf("nextRetryWait(%v) = %v, want %v", c.in, got, c.want)
		}
	}
}
