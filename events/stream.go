package events

import (
	"context"
	"iter"
	"sync"
	"sync/atomic"
)

// DefaultBuffer is how many events a Stream holds when NewStream is given 0.
const DefaultBuffer = 1024

// Stream turns the push-style Sink that the engine emits into into a
// pull-style sequence for one reader: the Go analogue of an async generator.
//
// Semantics:
//   - Events come out of All in the order the Sink received them.
//   - Between the two sits a buffer of a fixed size. While it has room, the
//     Sink never waits.
//   - When it is full, the Sink waits for the reader (back-pressure: a slow
//     reader slows the run down rather than losing events or growing memory
//     without bound), but never forever: it stops waiting, and drops the
//     event, when the reader stops (Stop, or leaving the range loop over
//     All), or when the context given to NewStream ends. Dropped counts them.
//   - Close says that no more events come: All then yields what is buffered
//     and ends. Events emitted after Close or Stop are dropped.
//
// The Sink is safe for concurrent use; All is for a single reader.
type Stream struct {
	ch       chan Event
	ctxDone  <-chan struct{}
	closed   chan struct{}
	stopped  chan struct{}
	closeOne sync.Once
	stopOne  sync.Once
	dropped  atomic.Int64
}

// NewStream returns a stream with a buffer of size events (DefaultBuffer when
// size ≤ 0). When ctx ends, a full buffer no longer holds the Sink up; a nil
// ctx never ends.
func NewStream(ctx context.Context, size int) *Stream {
	if size <= 0 {
		size = DefaultBuffer
	}
	s := &Stream{ch: make(chan Event, size), closed: make(chan struct{}), stopped: make(chan struct{})}
	if ctx != nil {
		s.ctxDone = ctx.Done()
	}
	return s
}

// Sink is the producer's end.
func (s *Stream) Sink() Sink { return s.send }

func (s *Stream) send(e Event) {
	select {
	case <-s.closed:
		s.dropped.Add(1)
		return
	case <-s.stopped:
		s.dropped.Add(1)
		return
	default:
	}
	select {
	case s.ch <- e:
		return
	default:
	}
	select {
	case s.ch <- e:
	case <-s.stopped:
		s.dropped.Add(1)
	case <-s.closed:
		s.dropped.Add(1)
	case <-s.ctxDone:
		s.dropped.Add(1)
	}
}

// Close ends the stream from the producer's side, once it emits no more.
func (s *Stream) Close() { s.closeOne.Do(func() { close(s.closed) }) }

// Stop ends the stream from the reader's side: the Sink drops from now on
// and never waits.
func (s *Stream) Stop() { s.stopOne.Do(func() { close(s.stopped) }) }

// Dropped is how many events were dropped (see Stream).
func (s *Stream) Dropped() int64 { return s.dropped.Load() }

// All yields the events until the stream is closed and drained, or stopped.
// Leaving the loop early stops the stream.
func (s *Stream) All() iter.Seq[Event] {
	return func(yield func(Event) bool) {
		for {
			select {
			case e := <-s.ch:
				if !yield(e) {
					s.Stop()
					return
				}
			case <-s.closed:
				for {
					select {
					case e := <-s.ch:
						if !yield(e) {
							s.Stop()
							return
						}
					default:
						return
					}
				}
			case <-s.stopped:
				return
			}
		}
	}
}

// Log keeps every event it receives, in order; its Sink is safe for
// concurrent use. The zero value is ready.
type Log struct {
	mu     sync.Mutex
	events []Event
	keep   func(Event) bool
}

// NewLog returns a Log that keeps only the events for which keep returns
// true (all when keep is nil).
func NewLog(keep func(Event) bool) *Log { return &Log{keep: keep} }

// Sink is the log's receiving end.
func (l *Log) Sink() Sink {
	return func(e Event) {
		if l.keep != nil && !l.keep(e) {
			return
		}
		l.mu.Lock()
		l.events = append(l.events, e)
		l.mu.Unlock()
	}
}

// Events returns a copy of the events kept so far.
func (l *Log) Events() []Event {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]Event(nil), l.events...)
}
