//go:build !race

package batch_test

// raceAllocs scales the allocation bounds of tests that count them (see
// race_test.go): 1 without the race detector.
const raceAllocs = 1
