package serve

import (
	"io"
	"net/http"
	"time"
)

// startSSE answers with a stream of server-sent events: the headers, the
// status, and the flusher of w (nil when it has none).
func startSSE(w http.ResponseWriter) http.Flusher {
	flusher, _ := w.(http.Flusher)
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	return flusher
}

// follow hands each the events of run id after the first after, as they
// come (first is the sequence number of evs[0]; each returns false to
// stop), with a keep-alive comment on w when none came for a while. It
// returns true once the run's events are all read and no more will come,
// when stop fires (nil: never) or when the server closes; false when a
// write failed, the request was cancelled or the events cannot be read.
func (s *Server) follow(w http.ResponseWriter, r *http.Request, flusher http.Flusher, id string, after int,
	stop <-chan time.Time, each func(first int, evs [][]byte) bool) bool {
	keep := time.NewTicker(s.o.KeepAlive)
	defer keep.Stop()
	for {
		evs, first, live, more, err := s.runs.Events(id, after)
		if err != nil {
			return false
		}
		after += len(evs)
		if len(evs) > 0 && !each(first, evs) {
			return false
		}
		if flusher != nil {
			flusher.Flush()
		}
		if !live && len(evs) == 0 {
			return true
		}
		if !live {
			continue // once more: nothing came since
		}
		select {
		case <-more:
		case <-keep.C:
			if _, err := io.WriteString(w, ": keep-alive\n\n"); err != nil {
				return false
			}
			if flusher != nil {
				flusher.Flush()
			}
		case <-stop:
			return true
		case <-r.Context().Done():
			return false
		case <-s.done:
			return true
		}
	}
}
