package process

import (
	"os"
	"os/exec"
	"runtime"
	"runtime/debug"
	"strings"
	"testing"
	"time"
)

// gcPercent reads GOGC as the runtime has it.
func gcPercent() int {
	p := debug.SetGCPercent(-1)
	debug.SetGCPercent(p)
	return p
}

// In a process of its own (it changes the collector of the whole process):
// GOGC starts at 1600 and is back to 100 after the first collection; a GOGC
// or GOMEMLIMIT in the environment is left alone.
func TestStartingHeap(t *testing.T) {
	if os.Getenv("ENSEMBLE_TEST_STARTING_HEAP") == "1" {
		AdjustStartingHeap()
		want := startingHeapGOGC
		if _, ok := os.LookupEnv("GOGC"); ok {
			want = 300 // as set below
		} else if _, ok := os.LookupEnv("GOMEMLIMIT"); ok {
			want = 100
		}
		if got := gcPercent(); got != want {
			t.Fatalf("GOGC %d at start, want %d", got, want)
		}
		deadline := time.Now().Add(30 * time.Second)
		for gcPercent() == startingHeapGOGC {
			if time.Now().After(deadline) {
				t.Fatal("GOGC still 1600 after collections")
			}
			runtime.GC()
			time.Sleep(time.Millisecond) // the finalizer runs on its own goroutine
		}
		if got := gcPercent(); want == startingHeapGOGC && got != 100 || want != startingHeapGOGC && got != want {
			t.Fatalf("GOGC %d after the first collection", got)
		}
		return
	}
	t.Parallel()
	for _, env := range [][]string{nil, {"GOGC=300"}, {"GOMEMLIMIT=1GiB"}} {
		cmd := exec.Command(os.Args[0], "-test.run=^TestStartingHeap$", "-test.count=1")
		cmd.Env = []string{"ENSEMBLE_TEST_STARTING_HEAP=1"}
		for _, kv := range os.Environ() {
			if !strings.HasPrefix(kv, "GOGC=") && !strings.HasPrefix(kv, "GOMEMLIMIT=") {
				cmd.Env = append(cmd.Env, kv)
			}
		}
		cmd.Env = append(cmd.Env, env...)
		if out, err := cmd.CombinedOutput(); err != nil || !strings.Contains(string(out), "PASS") {
			t.Errorf("%v: %v\n%s", env, err, out)
		}
	}
}
