// Package process sets up the ensemble binary's own process before it
// runs a command: how its garbage collector starts, and that the processes
// it starts cannot read its environment back.
package process

import (
	"os"
	"runtime"
	"runtime/debug"
)

// Setup does both (AdjustStartingHeap, HideEnviron).
func Setup() {
	AdjustStartingHeap()
	HideEnviron()
}

// startingHeapGOGC lets the heap grow to 64 MB before the first garbage
// collection (the runtime's first goal is 4 MB × GOGC/100), after which the
// collector goes by the default GOGC of 100. Most commands end before that
// first collection: a run of a few thousand turns spent a sixth of its
// time collecting a heap that never reached 64 MB. The peak memory of a
// larger run is unchanged, since the collector is back to the default
// from its first collection. The Go compiler starts the same way
// (docs/performance.md#the-garbage-collector).
const startingHeapGOGC = 1600

// AdjustStartingHeap sets that up, unless GOGC or GOMEMLIMIT is set: the
// user's settings win.
func AdjustStartingHeap() {
	if _, ok := os.LookupEnv("GOGC"); ok {
		return
	}
	if _, ok := os.LookupEnv("GOMEMLIMIT"); ok {
		return
	}
	debug.SetGCPercent(startingHeapGOGC)
	// An object whose finalizer runs after the first collection: large
	// enough not to share a block of the tiny allocator with anything.
	type sentinel [32]byte
	runtime.SetFinalizer(new(sentinel), func(*sentinel) { debug.SetGCPercent(100) })
}
