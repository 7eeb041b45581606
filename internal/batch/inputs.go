// Package batch runs an ensemble once per input of a JSON Lines file
// (docs/cli.md#ensemble-batch): the inputs parsed, concurrency runs at a
// time, each result written as a line in input order as soon as the lines
// before it are, the summary and exit code of the whole; with a state
// database, every run saved after every turn and the batch with it, so
// that a resumed batch finishes what is unfinished.
package batch

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"

	"github.com/ensemble-run/ensemble/internal/readcap"
)

// Input is one input of a batch (docs/cli.md#ensemble-batch).
type Input struct {
	Index int    // its position among the inputs, from 0
	Line  int    // its line in the inputs file, from 1
	ID    []byte // its id, compact JSON: as given, or the line number
	Input string // the run's input
}

// MaxInputCount is the most inputs a batch holds: an inputs file of short
// lines near its 1 GiB cap would be hundreds of millions of inputs, each
// taking far more memory than its line.
const MaxInputCount = 1_000_000

// maxInputErrors is how many problems of an inputs file are reported.
const maxInputErrors = 10

// MaxLine is the longest line of an inputs file: a run's input read by
// ensemble run is capped the same (its --max-input-size, by default).
const MaxLine = 10 << 20

// ParseInputs reads the inputs of a batch, one JSON value a line: a string
// (the input), or an object {"id": …, "input": …}. Blank lines are
// skipped. An id is a string or a number (compared as text); without one,
// the line number is the id. An input that is not a string is given to the
// run as its compact JSON text. Every problem names its line; nothing is
// run when there is one.
func ParseInputs(name string, data []byte) ([]*Input, error) {
	return parseInputs(name, bytes.NewReader(data))
}

// lineReader is the size of the buffer an inputs file is read through.
const lineReader = 64 << 10

// parseInputs is ParseInputs over a stream, read line by line: what it
// keeps is the inputs, never the stream's bytes, and a line longer than
// MaxLine is read no further than that. The stream's own errors (a
// *readcap.Reader's limit) are returned as they are.
func parseInputs(name string, r io.Reader) ([]*Input, error) {
	var out []*Input
	var errs []string
	seen := map[string]int{} // id as text → its line
	fail := func(line int, format string, args ...any) {
		errs = append(errs, fmt.Sprintf("%s:%d: %s", name, line, fmt.Sprintf(format, args...)))
	}
	br := bufio.NewReaderSize(r, lineReader)
	var text []byte // the line, reused: at most MaxLine+1 bytes kept
	for n := 1; ; n++ {
		text = text[:0]
		long, eof := false, false
		for {
			chunk, err := br.ReadSlice('\n')
			if len(text) == 0 {
				chunk = bytes.TrimLeft(chunk, " \t\r\n\v\f")
				if n == 1 {
					chunk = bytes.TrimPrefix(chunk, []byte("\ufeff")) // a byte order mark some editors write
				}
			}
			if !long {
				if room := MaxLine + 1 - len(text); len(chunk) > room {
					chunk, long = chunk[:room], true
				}
				if len(text)+len(chunk) > cap(text) {
					// Doubled: append grows a large slice by a quarter,
					// which for a line of 10 MiB allocated 50.
					text = slices.Grow(text, min(max(2*cap(text), len(text)+len(chunk)), MaxLine+1)-len(text))
				}
				text = append(text, chunk...)
			}
			if err == bufio.ErrBufferFull {
				continue
			}
			if err == io.EOF {
				eof = true
			} else if err != nil {
				return nil, err
			}
			break
		}
		text = bytes.TrimSpace(text)
		switch {
		case len(text) == 0:
		case len(text) > MaxLine:
			fail(n, "the line is larger than %s, the most a run's input may be (as run's default --max-input-size)", readcap.Size(MaxLine))
		default:
			in, err := parseInputLine(text)
			if err != nil {
				fail(n, "%v", err)
				break
			}
			in.Line, in.Index = n, len(out)
			if in.ID == nil {
				in.ID = strconv.AppendInt(nil, int64(n), 10)
			}
			key := idText(in.ID)
			if first, ok := seen[key]; ok {
				fail(n, "the id %s is the id of line %d too: ids must differ", in.ID, first)
				break
			}
			seen[key] = n
			out = append(out, in)
		}
		if len(out) > MaxInputCount {
			// Nothing more is read: the file is refused whatever follows.
			return nil, fmt.Errorf("%s:%d: more than %d inputs, the most a batch holds: split the file into batches of fewer", name, n, MaxInputCount)
		}
		if eof {
			break
		}
	}
	if len(errs) > 0 {
		if len(errs) > maxInputErrors {
			errs = append(errs[:maxInputErrors], fmt.Sprintf("(and %d more problems)", len(errs)-maxInputErrors))
		}
		return nil, errors.New(strings.Join(errs, "\n"))
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%s: no inputs (one JSON string or {\"id\": …, \"input\": …} object a line)", name)
	}
	return out, nil
}

// parseInputLine reads one line of an inputs file.
func parseInputLine(text []byte) (*Input, error) {
	if !json.Valid(text) {
		var v any
		err := json.Unmarshal(text, &v)
		return nil, fmt.Errorf("not valid JSON: %v", err)
	}
	switch text[0] {
	case '"':
		var s string
		if err := json.Unmarshal(text, &s); err != nil {
			return nil, err
		}
		return &Input{Input: s}, nil
	case '{':
	default:
		return nil, errors.New(`a line is a JSON string (the input) or an object {"id": …, "input": …}`)
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(text, &obj); err != nil {
		return nil, err
	}
	for k := range obj {
		if k != "id" && k != "input" {
			return nil, fmt.Errorf(`unknown key %q: an input line has "id" and "input"`, k)
		}
	}
	in := &Input{}
	if raw, ok := obj["id"]; ok {
		switch raw[0] {
		case '"', '-', '0', '1', '2', '3', '4', '5', '6', '7', '8', '9':
		default:
			return nil, fmt.Errorf("the id must be a string or a number, got %s", raw)
		}
		if string(raw) == `""` {
			return nil, errors.New(`the id is empty: give it a text, or leave "id" out to use the line number`)
		}
		var b bytes.Buffer
		if err := json.Compact(&b, raw); err != nil {
			return nil, err
		}
		in.ID = b.Bytes()
	}
	raw, ok := obj["input"]
	if !ok || string(raw) == "null" {
		return nil, errors.New(`no "input"`)
	}
	if raw[0] == '"' {
		if err := json.Unmarshal(raw, &in.Input); err != nil {
			return nil, err
		}
		return in, nil
	}
	var b bytes.Buffer
	if err := json.Compact(&b, raw); err != nil {
		return nil, err
	}
	in.Input = b.String()
	return in, nil
}

// idText is an id as the text it is compared by: a string's value, a
// number's digits.
func idText(id []byte) string {
	if len(id) > 0 && id[0] == '"' {
		var s string
		if json.Unmarshal(id, &s) == nil {
			return s
		}
	}
	return string(id)
}
