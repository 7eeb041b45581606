package mcpserve

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"strconv"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The SDK's connection ends as soon as its input does: it cancels the
// requests still running and refuses to write their replies. A client
// that writes its requests and closes its end (printf ... | ensemble mcp
// serve) would get no reply to a call still running. So the stdio
// transport holds the end of stdin back from the SDK until every request
// read has been answered (drain); meanwhile a request of the server's
// (elicitation) is answered with an error at once, since no reply can
// come from a client whose stdin is closed. The SDK then ends the session
// as usual, and Run returns nil.

// codeNoClient is the error a request of the server's gets once stdin
// has ended: a JSON-RPC server error.
const codeNoClient = -32000

// ErrStopped is the cause with which Serve cancels the calls still
// running when its context is done (Ctrl-C, SIGTERM).
var ErrStopped = errors.New("the server is stopping")

// Serve serves server over t until the client leaves (for the stdio
// Transport: once every request read has been answered), or until ctx
// is done, which cancels the calls still running at once (their cause
// ErrStopped) and returns ctx's error.
func Serve(ctx context.Context, server *mcp.Server, t mcp.Transport) error {
	server.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(hctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			// The SDK does not cancel a call when the server stops: it
			// waits for it to return.
			hctx, cancel := context.WithCancelCause(hctx)
			defer cancel(nil)
			stop := context.AfterFunc(ctx, func() { cancel(ErrStopped) })
			defer stop()
			return next(hctx, method, req)
		}
	})
	return server.Run(ctx, t)
}

// tracker follows the requests that cross the transport: the client's
// not answered yet, and the server's the client has not answered.
type tracker struct {
	mu     sync.Mutex
	calls  map[string]bool            // the client's requests not answered, by id
	asked  map[string]json.RawMessage // the server's requests not answered: their ids
	wake   chan struct{}              // something was sent
	closed chan struct{}              // the SDK closed the connection
	once   sync.Once
}

func newTracker() *tracker {
	return &tracker{calls: map[string]bool{}, asked: map[string]json.RawMessage{},
		wake: make(chan struct{}, 1), closed: make(chan struct{})}
}

// envelope is what tracker reads of a message.
type envelope struct {
	ID     json.RawMessage `json:"id"`
	Method *string         `json:"method"`
	Params struct {
		RequestID json.RawMessage `json:"requestId"`
	} `json:"params"`
}

// received notes a message read from the client (one valid line).
func (t *tracker) received(msg []byte) {
	var e envelope
	if t == nil || json.Unmarshal(msg, &e) != nil {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	id, hasID := idKey(e.ID)
	switch {
	case e.Method == nil && hasID: // a reply to a request of the server's
		delete(t.asked, id)
	case e.Method != nil && hasID:
		t.calls[id] = true
	case e.Method != nil && *e.Method == "notifications/cancelled":
		if id, ok := idKey(e.Params.RequestID); ok {
			delete(t.calls, id) // no reply is due
		}
	}
}

// sent notes a message written to the client (one line of the SDK's).
func (t *tracker) sent(line []byte) {
	var e envelope
	if t == nil || json.Unmarshal(line, &e) != nil {
		return
	}
	id, hasID := idKey(e.ID)
	if !hasID {
		return
	}
	t.mu.Lock()
	if e.Method != nil {
		t.asked[id] = e.ID
	} else {
		delete(t.calls, id)
	}
	t.mu.Unlock()
	select {
	case t.wake <- struct{}{}:
	default:
	}
}

// drain returns, at the end of stdin, once every request read has been
// answered or the SDK closed the connection; until then the server's
// requests are answered on pw with an error.
func (t *tracker) drain(pw io.Writer) {
	if t == nil {
		return
	}
	for {
		t.mu.Lock()
		var ids []json.RawMessage
		for k, id := range t.asked {
			ids = append(ids, id)
			delete(t.asked, k)
		}
		idle := len(t.calls) == 0
		t.mu.Unlock()
		for _, id := range ids {
			answer(pw, id, codeNoClient, "no reply can come: the client closed its input")
		}
		if idle {
			return
		}
		select {
		case <-t.wake:
		case <-t.closed:
			return
		}
	}
}

// idKey is a message's id as a key (the SDK's ids are strings or
// integers, a number truncated); false when it has none.
func idKey(raw json.RawMessage) (string, bool) {
	if len(raw) == 0 || isNull(raw) {
		return "", false
	}
	if raw[0] == '"' {
		var s string
		if json.Unmarshal(raw, &s) != nil {
			return "", false
		}
		return "s" + s, true
	}
	var f float64
	if json.Unmarshal(raw, &f) != nil {
		return "", false
	}
	return "n" + strconv.FormatInt(int64(f), 10), true
}

// trackedWriter is the SDK's writer: each of its lines, once written, is
// told to tr (not the filter's answers, whose ids may be a call's too).
type trackedWriter struct {
	*lockedWriter
	tr *tracker
}

func (w *trackedWriter) Write(p []byte) (int, error) {
	n, err := w.lockedWriter.Write(p)
	w.tr.sent(p) // written or not, it will not be written again
	return n, err
}

// trackedReader is the SDK's end of the pipe: closing it (the SDK closed
// the connection) ends a drain.
type trackedReader struct {
	*io.PipeReader
	tr *tracker
}

func (r *trackedReader) Close() error {
	r.tr.once.Do(func() { close(r.tr.closed) })
	return r.PipeReader.Close()
}
