package events

import (
	"context"
	"encoding/json"
	"fmt"
	"iter"
	"sync"
	"testing"
	"time"
)

func TestEmitStampsTheTime(t *testing.T) {
	var got Event
	Sink(func(e Event) { got = e }).Emit(Event{Type: RunStarted})
	if got.Time.IsZero() || got.Time.Location() != time.UTC {
		t.Fatalf("time %v", got.Time)
	}
	fixed := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	Sink(func(e Event) { got = e }).Emit(Event{Type: RunStarted, Time: fixed})
	if !got.Time.Equal(fixed) {
		t.Fatalf("a set time was replaced: %v", got.Time)
	}
	var nilSink Sink
	nilSink.Emit(Event{Type: RunStarted}) // no panic
}

func TestEventJSONNamesAndOmissions(t *testing.T) {
	b, err := json.Marshal(Event{Type: TurnStarted, Time: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), Turn: 2, Agents: []string{"a"}})
	if err != nil {
		t.Fatal(err)
	}
	want := `{"type":"turn_started","timestamp":"2026-01-01T00:00:00Z","turn":2,"agents":["a"]}`
	if string(b) != want {
		t.Fatalf("got  %s\nwant %s", b, want)
	}
}

func TestTee(t *testing.T) {
	if Tee() != nil || Tee(nil, nil) != nil {
		t.Fatal("Tee of no sinks is not nil")
	}
	var a, b []Type
	s := Tee(func(e Event) { a = append(a, e.Type) }, nil, func(e Event) { b = append(b, e.Type) })
	s.Emit(Event{Type: RunStarted})
	s.Emit(Event{Type: RunCompleted})
	if fmt.Sprint(a) != "[run_started run_completed]" || fmt.Sprint(a) != fmt.Sprint(b) {
		t.Fatalf("a %v b %v", a, b)
	}
}

func TestLogKeepsWhatItIsAskedTo(t *testing.T) {
	l := NewLog(func(e Event) bool { return e.Type != TextDelta })
	var wg sync.WaitGroup
	for i := range 50 {
		wg.Go(func() {
			l.Sink().Emit(Event{Type: TextDelta})
			l.Sink().Emit(Event{Type: AgentStarted, Execution: i})
		})
	}
	wg.Wait()
	if n := len(l.Events()); n != 50 {
		t.Fatalf("kept %d", n)
	}
}

func collect(s *Stream) chan []Event {
	out := make(chan []Event, 1)
	go func() {
		var evs []Event
		for e := range s.All() {
			evs = append(evs, e)
		}
		out <- evs
	}()
	return out
}

func TestStreamKeepsOrderAndDrainsOnClose(t *testing.T) {
	s := NewStream(context.Background(), 4)
	got := collect(s)
	for i := range 100 {
		s.Sink().Emit(Event{Type: AgentStarted, Execution: i})
	}
	s.Close()
	evs := <-got
	if len(evs) != 100 {
		t.Fatalf("got %d events", len(evs))
	}
	for i, e := range evs {
		if e.Execution != i {
			t.Fatalf("event %d is %d", i, e.Execution)
		}
	}
	if s.Dropped() != 0 {
		t.Fatalf("dropped %d", s.Dropped())
	}
}

func TestStreamCloseWithBufferedEvents(t *testing.T) {
	s := NewStream(nil, 8)
	for i := range 8 {
		s.Sink().Emit(Event{Execution: i})
	}
	s.Close()
	s.Sink().Emit(Event{Execution: 99}) // after Close: dropped
	var n int
	for e := range s.All() {
		if e.Execution != n {
			t.Fatalf("event %d is %d", n, e.Execution)
		}
		n++
	}
	if n != 8 || s.Dropped() != 1 {
		t.Fatalf("read %d, dropped %d", n, s.Dropped())
	}
}

// sendsWithin reports whether emitting e returns within d.
func sendsWithin(s *Stream, e Event, d time.Duration) bool {
	done := make(chan struct{})
	go func() {
		s.Sink().Emit(e)
		close(done)
	}()
	select {
	case <-done:
		return true
	case <-time.After(d):
		return false
	}
}

func TestStreamBackPressure(t *testing.T) {
	s := NewStream(context.Background(), 1)
	s.Sink().Emit(Event{Execution: 1}) // fills the buffer
	done := make(chan struct{})
	go func() {
		s.Sink().Emit(Event{Execution: 2})
		close(done)
	}()
	select {
	case <-done:
		t.Fatal("a full buffer did not hold the sink up")
	case <-time.After(50 * time.Millisecond):
	}
	next, stop := iter.Pull(s.All())
	defer stop()
	if e, _ := next(); e.Execution != 1 {
		t.Fatalf("first event %d", e.Execution)
	}
	<-done // reading made room
	if e, _ := next(); e.Execution != 2 {
		t.Fatalf("second event %d", e.Execution)
	}
}

func TestStreamNeverBlocksForeverWhenTheReaderLeaves(t *testing.T) {
	s := NewStream(context.Background(), 1)
	s.Sink().Emit(Event{Execution: 1})
	for e := range s.All() {
		_ = e
		break // leaving the loop stops the stream
	}
	for i := range 10 {
		if !sendsWithin(s, Event{Execution: i}, time.Second) {
			t.Fatal("the sink blocked after the reader left")
		}
	}
	if s.Dropped() == 0 {
		t.Fatal("nothing counted as dropped")
	}
}

func TestStreamNeverBlocksForeverWhenTheContextEnds(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	s := NewStream(ctx, 1)
	s.Sink().Emit(Event{Execution: 1})
	blocked := make(chan struct{})
	go func() {
		s.Sink().Emit(Event{Execution: 2})
		close(blocked)
	}()
	time.Sleep(20 * time.Millisecond)
	cancel()
	select {
	case <-blocked:
	case <-time.After(30 * time.Second):
		t.Fatal("the sink is still blocked after the context ended")
	}
	// What was buffered is still delivered.
	s.Close()
	var got []int
	for e := range s.All() {
		got = append(got, e.Execution)
	}
	if fmt.Sprint(got) != "[1]" || s.Dropped() != 1 {
		t.Fatalf("got %v, dropped %d", got, s.Dropped())
	}
}

func TestStreamConcurrentProducers(t *testing.T) {
	s := NewStream(context.Background(), 3)
	got := collect(s)
	var wg sync.WaitGroup
	for p := range 8 {
		wg.Go(func() {
			for i := range 200 {
				s.Sink().Emit(Event{Agent: fmt.Sprint(p), Execution: i})
			}
		})
	}
	wg.Wait()
	s.Close()
	evs := <-got
	if len(evs) != 8*200 {
		t.Fatalf("got %d", len(evs))
	}
	last := map[string]int{}
	for _, e := range evs {
		if prev, ok := last[e.Agent]; ok && e.Execution != prev+1 {
			t.Fatalf("producer %s: %d after %d", e.Agent, e.Execution, prev)
		}
		last[e.Agent] = e.Execution
	}
}
