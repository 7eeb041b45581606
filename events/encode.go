package events

import (
	"bufio"
	"encoding/json"
	"strconv"
	"sync"

	"github.com/ensemble-run/ensemble/internal/jsonw"
)

// appendEvent appends ev as json.Marshal writes it, field by field in the
// order of Event, without reflection: an event of a served run is encoded
// once for its journal, and reflecting over Event was most of what
// building the events of a run cost (docs/performance.md#serving). The
// values of its any fields go through jsonw, which hands what it does not
// know to encoding/json. It fails where json.Marshal could (a time out of
// its range, a number that is not one, a value it refuses): Marshal then
// asks json.Marshal, for its error. TestMarshalEveryField holds it to
// json.Marshal for every field of Event.
func appendEvent(dst []byte, ev *Event) ([]byte, error) {
	var err error
	dst = append(dst, `{"type":`...)
	dst = jsonw.AppendString(dst, string(ev.Type))
	dst = append(dst, `,"timestamp":"`...)
	if dst, err = ev.Time.AppendText(dst); err != nil {
		return dst, err
	}
	dst = append(dst, '"')
	dst = appendInt(dst, `,"turn":`, ev.Turn)
	dst = appendString(dst, `,"agent":`, ev.Agent)
	dst = appendInt(dst, `,"execution":`, ev.Execution)
	if len(ev.Agents) > 0 {
		dst = append(dst, `,"agents":[`...)
		for i, a := range ev.Agents {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = jsonw.AppendString(dst, a)
		}
		dst = append(dst, ']')
	}
	dst = appendString(dst, `,"tool":`, ev.Tool)
	dst = appendString(dst, `,"tool_call_id":`, ev.ToolID)
	dst = appendString(dst, `,"arguments":`, ev.Arguments)
	if dst, err = appendAny(dst, `,"output":`, ev.Output); err != nil {
		return dst, err
	}
	dst = appendString(dst, `,"error":`, ev.Error)
	dst = appendString(dst, `,"message":`, ev.Message)
	if ev.Duration != 0 {
		if dst, err = jsonw.AppendIndent(append(dst, `,"duration_seconds":`...), ev.Duration, "", "", 0); err != nil {
			return dst, err
		}
	}
	if res, ok := ev.Result.(compactResult); ok && res.WritesAsMarshal() {
		if dst, err = appendResult(append(dst, `,"result":`...), res); err != nil {
			return dst, err
		}
	} else if dst, err = appendAny(dst, `,"result":`, ev.Result); err != nil {
		return dst, err
	}
	dst = appendInt(dst, `,"attempt":`, ev.Attempt)
	if dst, err = appendAny(dst, `,"spend":`, ev.Spend); err != nil {
		return dst, err
	}
	dst = appendString(dst, `,"question":`, ev.Question)
	if len(ev.Dependencies) > 0 {
		if dst, err = jsonw.AppendIndent(append(dst, `,"dependencies":`...), ev.Dependencies, "", "", 0); err != nil {
			return dst, err
		}
	}
	if ev.Deadline != nil {
		dst = append(dst, `,"deadline":"`...)
		if dst, err = ev.Deadline.AppendText(dst); err != nil {
			return dst, err
		}
		dst = append(dst, '"')
	}
	if dst, err = appendAny(dst, `,"expectations":`, ev.Expectations); err != nil {
		return dst, err
	}
	if dst, err = appendAny(dst, `,"warning":`, ev.Warning); err != nil {
		return dst, err
	}
	return append(dst, '}'), nil
}

// appendInt appends the field key (`,"name":`) and n, unless n is 0
// (omitempty).
func appendInt(dst []byte, key string, n int) []byte {
	if n == 0 {
		return dst
	}
	return strconv.AppendInt(append(dst, key...), int64(n), 10)
}

// appendString appends the field key and s, unless s is empty.
func appendString(dst []byte, key, s string) []byte {
	if s == "" {
		return dst
	}
	return jsonw.AppendString(append(dst, key...), s)
}

// appendAny appends the field key and v, unless v is nil (omitempty omits
// a nil interface only: a nil pointer in one is written, as null).
func appendAny(dst []byte, key string, v any) ([]byte, error) {
	if v == nil {
		return dst, nil
	}
	return jsonw.AppendIndent(append(dst, key...), v, "", "", 0)
}

// appendResult appends what res writes, through a buffered writer
// borrowed from a pool: without one, the result's writer makes a buffer of
// its own (64 KiB, cleared), which cost more than writing the result.
func appendResult(dst []byte, res compactResult) ([]byte, error) {
	w := appender{dst}
	bw := writers.Get().(*bufio.Writer)
	bw.Reset(&w)
	err := res.WriteCompactJSON(bw)
	if err == nil {
		err = bw.Flush()
	}
	bw.Reset(nil)
	writers.Put(bw)
	return w.b, err
}

var writers = sync.Pool{New: func() any { return bufio.NewWriterSize(nil, 8<<10) }}

// appender is an io.Writer appending to a byte slice.
type appender struct{ b []byte }

func (a *appender) Write(p []byte) (int, error) {
	a.b = append(a.b, p...)
	return len(p), nil
}

// marshalSlow is json.Marshal(ev): its bytes, or its error.
func marshalSlow(ev *Event) ([]byte, error) { return json.Marshal(ev) }
