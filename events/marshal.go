package events

import (
	"bytes"
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

// Marshal is json.Marshal(ev), byte for byte. A run_completed event's
// result (the whole result object) is written by the result's own writer
// when it has one: through reflection it cost a tenth of the CPU of a run
// served with its events kept (docs/performance.md#serving).
func Marshal(ev Event) ([]byte, error) {
	res, ok := ev.Result.(compactResult)
	// The result is spliced in as the last field: only when every field
	// after it in Event is empty (omitted).
	if !ok || !res.WritesAsMarshal() || ev.Attempt != 0 || ev.Spend != nil || ev.Question != "" || len(ev.Dependencies) > 0 || ev.Expectations != nil || ev.Warning != nil {
		return json.Marshal(ev)
	}
	ev.Result = nil
	head, err := json.Marshal(ev)
	if err != nil {
		return nil, err
	}
	var b bytes.Buffer
	b.Grow(len(head) + 4096)
	b.Write(head[:len(head)-1])
	b.WriteString(`,"result":`)
	if err := res.WriteCompactJSON(&b); err != nil {
		return nil, err
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}
