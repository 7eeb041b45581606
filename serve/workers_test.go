package serve

import (
	"testing"
	"time"
)

// waitIdle polls until w has n goroutines waiting for work.
func waitIdle(t *testing.T, w *workers, n int32) {
	t.Helper()
	for deadline := time.Now().Add(time.Minute); w.idle.Load() != n; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%d goroutines wait, want %d", w.idle.Load(), n)
		}
	}
}

// A goroutine that ran a function waits for the next (at most keep of
// them), which it runs rather than a new goroutine; close ends those that
// wait, and a function handed over after it still runs.
func TestWorkersKeepTheirGoroutines(t *testing.T) {
	t.Parallel()
	w := newWorkers(1)
	ran := make(chan int32, 4)
	w.do(func() { ran <- -1 })
	<-ran
	waitIdle(t, w, 1)
	w.do(func() { ran <- w.idle.Load() }) // taken by the one that waits
	if idle := <-ran; idle != 0 {
		t.Fatalf("%d goroutines waited while the second function ran: it got a new one", idle)
	}
	waitIdle(t, w, 1)
	// two at once: the second gets a goroutine of its own, which ends
	// after it (one waits already)
	block := make(chan struct{})
	w.do(func() { <-block; ran <- 0 })
	w.do(func() { <-block; ran <- 0 })
	close(block)
	<-ran
	<-ran
	waitIdle(t, w, 1)
	w.close()
	waitIdle(t, w, 0)
	w.do(func() { ran <- 0 })
	select {
	case <-ran:
	case <-time.After(time.Minute):
		t.Fatal("a function handed over after close did not run")
	}
}
