//go:build race

package batch_test

// raceOn: the race detector's instrumentation allocates too, so tests that
// hold what reading allocates to a bound do not hold it under -race.
const raceOn = true
