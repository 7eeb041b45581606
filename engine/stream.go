package engine

import (
	"context"
	"iter"

	"github.com/ensemble-run/ensemble/events"
)

// Events drives the run to its end, as Run does, and yields its events as
// they happen: the pull form of Options.Events (which still receives every
// event too), the Go analogue of an async generator.
//
//	for ev := range r.Events(ctx) {
//		switch ev.Type {
//		case events.TextDelta:
//			fmt.Print(ev.Message)
//		case events.RunCompleted:
//			res := ev.Result.(*engine.Result)
//			...
//		}
//	}
//
// The last event is always run_completed, carrying the *Result. The run goes
// on in its own goroutine while the loop body runs, through a buffer of
// events.DefaultBuffer events: when the loop body falls that far behind, the
// run waits for it (back-pressure), but never beyond ctx or the run's
// timeout, after which events that do not fit are dropped (run_completed
// never is). Leaving the loop early cancels the run, as SIGINT would, and
// waits for its agents to stop; the run then ends as "cancelled".
//
// Call Events, Run or Step on a Run, not several of them at once.
func (r *Run) Events(ctx context.Context) iter.Seq[events.Event] {
	return func(yield func(events.Event) bool) {
		ctx, cancel := context.WithCancel(ctx)
		defer cancel()
		bound, cancelBound := context.WithTimeout(ctx, r.timeout)
		defer cancelBound()
		s := events.NewStream(bound, events.DefaultBuffer)
		var last events.Event // run_completed: delivered after the rest, never dropped
		push := s.Sink()
		saved := r.opts.Events
		r.opts.Events = events.Tee(saved, func(e events.Event) {
			if e.Type == events.RunCompleted {
				last = e
				return
			}
			push(e)
		})
		done := make(chan struct{})
		go func() {
			defer close(done)
			defer s.Close()
			r.Run(ctx)
		}()
		stopped := false
		defer func() {
			cancel()
			s.Stop()
			<-done
			r.opts.Events = saved
		}()
		for e := range s.All() {
			if !yield(e) {
				stopped = true
				break
			}
		}
		if stopped {
			return
		}
		<-done
		yield(last)
	}
}
