package serve

import "sync/atomic"

// workers runs the server's runs in the background on goroutines that
// outlive them: a goroutine made for each run started with a small stack
// and grew it, copying it each time, down to the depth of a saved turn
// (SQLite's frames): a goroutine that ran a run before has that stack
// already (docs/performance.md#serving). At most keep goroutines wait
// for work; the others end with their function.
type workers struct {
	work chan func()
	idle atomic.Int32
	keep int32
	quit chan struct{}
}

func newWorkers(keep int) *workers {
	return &workers{work: make(chan func()), keep: int32(keep), quit: make(chan struct{})}
}

// do runs f on a waiting goroutine, or on a new one when none waits.
func (w *workers) do(f func()) {
	select {
	case w.work <- f:
	default:
		go w.loop(f)
	}
}

// loop runs f, then what it is handed, while it is among the keep that
// wait, until close.
func (w *workers) loop(f func()) {
	for {
		f()
		if w.idle.Add(1) > w.keep {
			w.idle.Add(-1)
			return
		}
		select {
		case f = <-w.work:
			w.idle.Add(-1)
		case <-w.quit:
			w.idle.Add(-1)
			return
		}
	}
}

// close ends the goroutines that wait; a function handed to do after it
// runs on a goroutine of its own.
func (w *workers) close() { close(w.quit) }
