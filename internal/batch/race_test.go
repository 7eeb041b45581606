//go:build race

package batch_test

// raceAllocs scales the allocation bounds of tests that count them: the
// race detector's instrumentation allocates on its own (reading a line
// past MaxLine allocates about 30 MB with -race, 21 MB without).
const raceAllocs = 2
