package serve

// Slow clients: a request whose body trickles in, a connection left open
// between requests, a client that stops reading its answer. None may hold
// a handler, a connection or its goroutine for longer than a timeout:
// enough of them would take every file descriptor of the server, and
// none needs the token (a trigger webhook reads its body before it checks
// its signature).

import (
	"io"
	"net/http"
	"time"
)

// Defaults of Options.ReadTimeout, IdleTimeout and WriteTimeout.
const (
	defaultReadTimeout  = time.Minute
	defaultIdleTimeout  = 2 * time.Minute
	defaultWriteTimeout = 2 * time.Minute
)

// slowClients bounds the time a request's body may take to arrive, and
// each write of its answer: a write deadline set before every Write and
// Flush, so that a stream that writes now and then (events, keep-alive
// comments) lives as long as its client reads it, and one whose client
// stopped reading ends. A body is read within ReadTimeout of the start of
// the handler; once it is read whole the deadline is lifted, so that a
// request that waits (Prefer: wait, an event stream) is not cut.
func (s *Server) slowClients(w http.ResponseWriter, r *http.Request) (http.ResponseWriter, func()) {
	rc := http.NewResponseController(w)
	if r.Body != nil && r.Body != http.NoBody && r.ContentLength != 0 {
		rc.SetReadDeadline(time.Now().Add(s.o.ReadTimeout))
		r.Body = &deadlineBody{ReadCloser: r.Body, rc: rc}
	}
	dw := &deadlineWriter{ResponseWriter: w, rc: rc, d: s.o.WriteTimeout}
	dw.extend()
	// What net/http writes after the handler (its buffer, the end of a
	// chunked answer) has its own time.
	return dw, dw.extend
}

// deadlineBody lifts the read deadline once the body is read whole.
type deadlineBody struct {
	io.ReadCloser
	rc *http.ResponseController
}

func (b *deadlineBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if err == io.EOF {
		b.rc.SetReadDeadline(time.Time{})
	}
	return n, err
}

// deadlineWriter sets the connection's write deadline d ahead before each
// write and flush.
type deadlineWriter struct {
	http.ResponseWriter
	rc *http.ResponseController
	d  time.Duration
}

func (w *deadlineWriter) extend() { w.rc.SetWriteDeadline(time.Now().Add(w.d)) }

func (w *deadlineWriter) Write(p []byte) (int, error) {
	w.extend()
	return w.ResponseWriter.Write(p)
}

func (w *deadlineWriter) Flush() {
	w.extend()
	w.rc.Flush()
}

// FlushError is Flush for http.ResponseController.
func (w *deadlineWriter) FlushError() error {
	w.extend()
	return w.rc.Flush()
}

// Unwrap lets http.ResponseController reach the connection's writer.
func (w *deadlineWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// refuse answers an error before the request's body is read: the
// connection is closed after it, so that net/http does not read the body
// first to keep the connection (a body that trickles in would hold the
// refusal back until ReadTimeout).
func refuse(w http.ResponseWriter, r *http.Request, status int, code, msg string) {
	if r.ContentLength != 0 {
		w.Header().Set("Connection", "close")
	}
	writeError(w, status, code, msg)
}
