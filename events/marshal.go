package events

import (
	"encoding/json"
	"io"
)

// compactResult is a result that writes the bytes json.Marshal writes of
// it itself (engine.Result: WriteCompactJSON, held to json.Marshal by its
// tests), faster than reflection.
type compactResult interface {
	WriteCompactJSON(w io.Writer) error
	// WritesAsMarshal reports whether WriteCompactJSON writes what
	// json.Marshal would of this one.
	WritesAsMarshal() bool
}

// Marshal is json.Marshal(ev), byte for byte, written without reflection
// (appendEvent); a run_completed event's result (the whole result object)
// by the result's own writer when it has one. A served run's events,
// encoded and kept in its journal, took a sixth of its CPU, most of the
// encoding reflection (docs/performance.md#serving).
func Marshal(ev Event) ([]byte, error) { return AppendJSON(make([]byte, 0, 256), ev) }

// AppendJSON appends Marshal(ev) to dst: a caller that encodes many events
// into a buffer of its own allocates nothing per event. On an error dst is
// returned as it was.
func AppendJSON(dst []byte, ev Event) ([]byte, error) {
	b, err := appendEvent(dst, &ev)
	if err != nil {
		return appendSlow(dst, ev)
	}
	return b, nil
}

// appendSlow appends json.Marshal(ev): its error, or what it makes of the
// value. A copy of ev goes to encoding/json, so that ev itself stays on
// the stack of AppendJSON (an Event is a few hundred bytes).
func appendSlow(dst []byte, ev Event) ([]byte, error) {
	slow, err := marshalSlow(&ev)
	if err != nil {
		return dst, err
	}
	return append(dst, slow...), nil
}

// CompletedTurn is the turn of a turn_completed event written as JSON (a
// line of the events a server keeps); 0 for any other event, or for what
// is not an event.
func CompletedTurn(ev []byte) int {
	var e struct {
		Type Type `json:"type"`
		Turn int  `json:"turn"`
	}
	if json.Unmarshal(ev, &e) != nil || e.Type != TurnCompleted {
		return 0
	}
	return e.Turn
}
