package mcpserve

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The SDK's stdio connection ends the session at the first line it cannot
// decode (not JSON, not a JSON-RPC message, a batch it refuses, a line
// over its length cap): one bad line from a client would stop the server.
// Transport puts a filter in front of it. Every line is checked first:
// one the SDK would refuse is answered here with a JSON-RPC error, and
// the next lines are served; the others go on to the SDK unchanged.

// JSON-RPC error codes.
const (
	codeParseError     = -32700
	codeInvalidRequest = -32600
)

// maxLine caps one line (one message), as the SDK does by default.
const maxLine = mcp.DefaultMaxLineLength

// maxDepth is the nesting the SDK decodes (its internal JSON package).
const maxDepth = 1000

// Transport is the stdio transport of ensemble mcp serve: messages read
// from r, one a line, and written to w. A line that is not a JSON-RPC
// message is answered with an error (-32700 when it is not JSON, -32600
// when it is JSON but no request, notification or response; batches
// included: MCP dropped them in 2025-06-18) and skipped.
//
// At the end of r the server reads no more requests, but answers those
// it has read before it ends the session (stdio.go).
func Transport(r io.Reader, w io.Writer) mcp.Transport {
	tr := newTracker()
	out := &lockedWriter{w: w}
	pr, pw := io.Pipe()
	go filterLines(r, pw, out, maxLine, tr)
	return &mcp.IOTransport{Reader: &trackedReader{PipeReader: pr, tr: tr},
		Writer: &trackedWriter{lockedWriter: out, tr: tr}, MaxLineLength: -1}
}

// lockedWriter writes whole messages, the SDK's and the filter's, one at a
// time: each is one Write of a line.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

func (*lockedWriter) Close() error { return nil }

// filterLines copies the valid lines of r to pw, answers the others on
// out (those longer than limit unread), and closes pw at the end of r (the
// client left; with tr, once the requests read are answered: drain) or
// when the SDK stops reading (it closed the connection).
func filterLines(r io.Reader, pw *io.PipeWriter, out io.Writer, limit int, tr *tracker) {
	br := bufio.NewReaderSize(r, 64<<10)
	var line []byte
	for {
		var tooLong bool
		line = line[:0]
		var err error
		for {
			var chunk []byte
			chunk, err = br.ReadSlice('\n')
			if !tooLong {
				if len(line)+len(chunk) > limit {
					tooLong, line = true, line[:0]
				} else {
					line = append(line, chunk...)
				}
			}
			if !errors.Is(err, bufio.ErrBufferFull) {
				break
			}
		}
		if tooLong {
			answer(out, nil, codeInvalidRequest, fmt.Sprintf("Invalid Request: the message is longer than %d bytes", limit))
		} else if msg := bytes.TrimSpace(line); len(msg) > 0 {
			if id, code, why := check(msg); code != 0 {
				answer(out, id, code, why)
			} else {
				tr.received(msg)
				if _, werr := pw.Write(append(msg, '\n')); werr != nil {
					return // the SDK closed the connection
				}
			}
		}
		if err != nil {
			if errors.Is(err, io.EOF) {
				tr.drain(pw)
			}
			pw.CloseWithError(err) // io.EOF: the session ends
			return
		}
	}
}

// answer writes the error response to a message whose id is id (nil:
// none could be read).
func answer(out io.Writer, id json.RawMessage, code int, message string) {
	if id == nil {
		id = json.RawMessage("null")
	}
	b, err := json.Marshal(struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Error   struct {
			Code    int    `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}{JSONRPC: "2.0", ID: id, Error: struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	}{code, message}})
	if err != nil {
		return
	}
	_, _ = out.Write(append(b, '\n')) // a client that left reads nothing
}

// check reports why the SDK would refuse msg, one line: the error code and
// message to answer it with (code 0: none, it is passed on), and the id to
// answer with when msg has a valid one. It is at least as strict as the
// SDK's decoding (internal/jsonrpc2.DecodeMessage): keys are matched
// exactly, as there.
func check(msg []byte) (id json.RawMessage, code int, why string) {
	if !json.Valid(msg) {
		var v any
		err := json.Unmarshal(msg, &v)
		return nil, codeParseError, "Parse error: " + fmt.Sprint(err)
	}
	if tooDeep(msg) {
		return nil, codeInvalidRequest, fmt.Sprintf("Invalid Request: the message nests deeper than %d levels", maxDepth)
	}
	invalid := func(why string) (json.RawMessage, int, string) {
		return id, codeInvalidRequest, "Invalid Request: " + why
	}
	if msg[0] == '[' {
		return invalid("batches are not supported")
	}
	var fields map[string]json.RawMessage
	if msg[0] != '{' || json.Unmarshal(msg, &fields) != nil {
		return invalid("not a JSON object")
	}
	hasID := false
	if raw, ok := fields["id"]; ok && !isNull(raw) {
		var n float64
		if raw[0] != '"' && json.Unmarshal(raw, &n) != nil { // not a number, or out of range
			return invalid(`"id" is neither a string nor a number`)
		}
		id, hasID = raw, true
	}
	var version string
	if raw, ok := fields["jsonrpc"]; !ok || json.Unmarshal(raw, &version) != nil || version != "2.0" || isNull(raw) {
		return invalid(`"jsonrpc" is not "2.0"`)
	}
	if raw, ok := fields["method"]; ok {
		var method string
		if isNull(raw) || json.Unmarshal(raw, &method) != nil {
			return invalid(`"method" is not a string`)
		}
		return nil, 0, ""
	}
	// A response (to a request of the server's).
	if !hasID {
		return invalid(`no "method", and no "id"`)
	}
	if raw, ok := fields["error"]; ok && !isNull(raw) {
		var e struct {
			Code    int64           `json:"code"`
			Message string          `json:"message"`
			Data    json.RawMessage `json:"data"`
		}
		if json.Unmarshal(raw, &e) != nil {
			return invalid(`"error" is not an error object`)
		}
	}
	return nil, 0, ""
}

func isNull(raw json.RawMessage) bool { return string(raw) == "null" }

// tooDeep reports whether the JSON msg nests deeper than maxDepth.
func tooDeep(msg []byte) bool {
	depth, inString, escaped := 0, false, false
	for _, b := range msg {
		switch {
		case inString && escaped:
			escaped = false
		case inString && b == '\\':
			escaped = true
		case inString && b == '"':
			inString = false
		case inString:
		case b == '"':
			inString = true
		case b == '{' || b == '[':
			if depth++; depth > maxDepth {
				return true
			}
		case b == '}' || b == ']':
			depth--
		}
	}
	return false
}
