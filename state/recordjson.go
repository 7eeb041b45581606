package state

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	"github.com/ensemble-run/ensemble/internal/jsonw"
)

// AppendIndent appends r as json.MarshalIndent(r, prefix, indent) writes it,
// several times faster: printing a long run's history is mostly this
// (docs/performance.md). With an empty prefix and indent it writes r as
// json.Marshal does (compact), as the state database stores it. A test holds
// it to encoding/json for every field.
func (r *Record) AppendIndent(dst []byte, prefix, indent string) ([]byte, error) {
	var err error
	compact := jsonw.Compact(prefix, indent)
	// nl breaks the line and indents it depth times, key writes a key and
	// its colon: neither breaks nor spaces when compact.
	nl := func(depth int) { dst = jsonw.Newline(dst, prefix, indent, depth) }
	key := func(name string) {
		dst = append(dst, '"')
		dst = append(dst, name...)
		dst = append(dst, '"', ':')
		if !compact {
			dst = append(dst, ' ')
		}
	}
	field := func(name string) {
		nl(1)
		key(name)
	}
	value := func(v any) {
		if err == nil {
			dst, err = jsonw.AppendIndent(dst, v, prefix, indent, 1)
		}
	}
	dst = append(dst, '{')
	field("turn_number")
	dst = strconv.AppendInt(dst, int64(r.TurnNumber), 10)
	dst = append(dst, ',')
	field("agent_name")
	dst = jsonw.AppendString(dst, r.AgentName)
	dst = append(dst, ',')
	if r.Instance != nil {
		field("instance")
		dst = strconv.AppendInt(dst, int64(*r.Instance), 10)
		dst = append(dst, ',')
	}
	if r.Of != "" {
		field("of")
		dst = jsonw.AppendString(dst, r.Of)
		dst = append(dst, ',')
	}
	field("execution")
	dst = strconv.AppendInt(dst, int64(r.Execution), 10)
	dst = append(dst, ',')
	if r.Skipped {
		field("skipped")
		dst = append(dst, "true,"...)
	}
	field("input_data")
	value(r.InputData)
	dst = append(dst, ',')
	field("output_data")
	value(r.OutputData)
	dst = append(dst, ',')
	field("error")
	if r.Error == nil {
		dst = append(dst, "null"...)
	} else {
		dst = jsonw.AppendString(dst, *r.Error)
	}
	dst = append(dst, ',')
	if r.Stderr != "" {
		field("stderr")
		dst = jsonw.AppendString(dst, r.Stderr)
		dst = append(dst, ',')
	}
	field("execution_time")
	value(r.ExecutionTime)
	dst = append(dst, ',')
	field("timestamp")
	dst = appendTime(dst, r.Timestamp, &err)
	dst = append(dst, ',')
	field("stop_reason")
	if r.StopReason == nil {
		dst = append(dst, "null"...)
	} else {
		dst = jsonw.AppendString(dst, *r.StopReason)
	}
	dst = append(dst, ',')
	field("usage")
	if r.Usage == nil {
		dst = append(dst, "null"...)
	} else {
		u := r.Usage
		dst = append(dst, '{')
		for i, kv := range [3]struct {
			k string
			v int
		}{{"requests", u.Requests}, {"input_tokens", u.InputTokens}, {"output_tokens", u.OutputTokens}} {
			if i > 0 {
				dst = append(dst, ',')
			}
			nl(2)
			key(kv.k)
			dst = strconv.AppendInt(dst, int64(kv.v), 10)
		}
		if u.Cost != 0 {
			dst = append(dst, ',')
			nl(2)
			key("cost")
			value(u.Cost)
		}
		nl(1)
		dst = append(dst, '}')
	}
	if len(r.Handles) > 0 {
		dst = append(dst, ',')
		field("handles")
		dst = append(dst, '[')
		for i, h := range r.Handles {
			if i > 0 {
				dst = append(dst, ',')
			}
			nl(2)
			dst = append(dst, '{')
			nl(3)
			key("agent_name")
			dst = jsonw.AppendString(dst, h.AgentName)
			dst = append(dst, ',')
			nl(3)
			key("execution")
			dst = strconv.AppendInt(dst, int64(h.Execution), 10)
			nl(2)
			dst = append(dst, '}')
		}
		nl(1)
		dst = append(dst, ']')
	}
	for _, d := range r.Details {
		dst = append(dst, ',')
		field(d.Key)
		buf := bytes.NewBuffer(dst)
		var derr error
		if compact {
			derr = json.Compact(buf, d.Value)
		} else {
			derr = json.Indent(buf, d.Value, prefix+indent, indent)
		}
		if derr != nil && err == nil {
			err = fmt.Errorf("detail %q: %w", d.Key, derr)
		}
		dst = buf.Bytes()
	}
	nl(0)
	dst = append(dst, '}')
	return dst, err
}

// appendTime appends t as t.MarshalJSON writes it, without allocating for
// the usual time (a year of four digits, an offset in whole minutes); any
// other is left to MarshalJSON, with its error.
func appendTime(dst []byte, t time.Time, err *error) []byte {
	if y := t.Year(); y >= 0 && y <= 9999 {
		if _, off := t.Zone(); off%60 == 0 && off > -24*3600 && off < 24*3600 {
			dst = append(dst, '"')
			dst = t.AppendFormat(dst, time.RFC3339Nano)
			return append(dst, '"')
		}
	}
	b, terr := t.MarshalJSON()
	if terr != nil && *err == nil {
		*err = terr
	}
	return append(dst, b...)
}
