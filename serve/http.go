package serve

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/ensemble-run/ensemble/internal/hostcheck"
	"github.com/ensemble-run/ensemble/internal/jsonw"
	"github.com/ensemble-run/ensemble/internal/tokencheck"
)

// ErrorBody is the one shape of every error the run API answers.
type ErrorBody struct {
	Error struct {
		Code    string `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

// writeError answers an error in the run API's shape.
func writeError(w http.ResponseWriter, status int, code, msg string) {
	var b ErrorBody
	b.Error.Code, b.Error.Message = code, msg
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(b)
}

// statusOf is the HTTP status of an *Error's code.
var statusOf = map[string]int{
	CodeNotFound:   http.StatusNotFound,
	CodeBadRequest: http.StatusBadRequest,
	CodeConflict:   http.StatusConflict,
	CodeBusy:       http.StatusTooManyRequests,
	CodeClosing:    http.StatusServiceUnavailable,
}

// HTTPStatus is the HTTP status of e (the inspector answers it so).
func (e *Error) HTTPStatus() int { return statusOf[e.Code] }

// fail answers err: an *Error with its status, a body over the cap with
// 413, anything else with 500; every secret redacted.
func (s *Server) fail(w http.ResponseWriter, err error) {
	var e *Error
	var big *http.MaxBytesError
	switch {
	case errors.As(err, &e):
		writeError(w, statusOf[e.Code], e.Code, s.runs.redact(e.Message))
	case errors.As(err, &big):
		writeError(w, http.StatusRequestEntityTooLarge, "too_large", fmt.Sprintf("the body is over %d bytes (--max-body)", big.Limit))
	case errors.Is(err, os.ErrDeadlineExceeded): // slowclient.go
		writeError(w, http.StatusRequestTimeout, "timeout", fmt.Sprintf("the body did not arrive within %s", s.o.ReadTimeout))
	default:
		writeError(w, http.StatusInternalServerError, "internal", s.runs.redact(err.Error()))
	}
}

// reply answers v as JSON, every secret redacted.
func (s *Server) reply(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		s.fail(w, err)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	w.Write(s.runs.redactBytes(b))
	w.Write([]byte{'\n'})
}

// decode reads the request's JSON body into v (a body is capped by guard).
func decode(r *http.Request, v any) error {
	b, err := io.ReadAll(r.Body)
	if err != nil {
		return err
	}
	if len(strings.TrimSpace(string(b))) == 0 {
		return nil
	}
	return unmarshalKnown(b, v)
}

// routes adds the run API to mux.
func (s *Server) routes(mux *http.ServeMux) {
	mux.HandleFunc("GET /v1/ensembles", s.apiEnsembles)
	mux.HandleFunc("POST /v1/ensembles/{name}/runs", s.apiStart)
	mux.HandleFunc("GET /v1/runs", s.apiRuns)
	mux.HandleFunc("GET /v1/runs/{id}", s.apiRun)
	mux.HandleFunc("GET /v1/runs/{id}/events", s.apiEvents)
	mux.HandleFunc("POST /v1/runs/{id}/answers", s.apiAnswers)
	mux.HandleFunc("POST /v1/runs/{id}/cancel", s.apiCancel)
	mux.HandleFunc("POST /v1/runs/{id}/fork", s.apiFork)
	mux.HandleFunc("/v1/", func(w http.ResponseWriter, r *http.Request) {
		writeError(w, http.StatusNotFound, CodeNotFound, "no such API: "+r.Method+" "+r.URL.Path)
	})
	// Any other path, and a trigger's path asked with another method than
	// POST: the error's one shape, not net/http's text.
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeError(w, http.StatusNotFound, CodeNotFound, "nothing is served at "+r.Method+" "+r.URL.Path)
	})
}

func (s *Server) apiEnsembles(w http.ResponseWriter, r *http.Request) {
	s.reply(w, http.StatusOK, map[string]any{"ensembles": s.runs.Ensembles()})
}

// startBody is the body of POST /v1/ensembles/{name}/runs.
type startBody struct {
	Input   json.RawMessage `json:"input"`
	RunID   string          `json:"run_id"`
	Webhook string          `json:"webhook"`
}

// runReply is what a POST that starts or continues a run answers.
type runReply struct {
	RunID  string          `json:"run_id"`
	Status string          `json:"status"`
	Result json.RawMessage `json:"result,omitempty"`
}

func (s *Server) apiStart(w http.ResponseWriter, r *http.Request) {
	var b startBody
	if err := decode(r, &b); err != nil {
		s.fail(w, err)
		return
	}
	var input *string
	if len(b.Input) > 0 && string(b.Input) != "null" {
		var text string
		if json.Unmarshal(b.Input, &text) != nil {
			// any other JSON value is given as its JSON text
			text = string(b.Input)
		}
		input = &text
	}
	wait, err := preferWait(r, s.o.MaxWait)
	if err != nil {
		s.fail(w, err)
		return
	}
	id, created, err := s.runs.Start(r.Context(), r.PathValue("name"), input, StartOptions{
		RunID: b.RunID, Webhook: b.Webhook, IdempotencyKey: r.Header.Get("Idempotency-Key"), Waited: wait > 0})
	if err != nil {
		s.fail(w, err)
		return
	}
	status := http.StatusCreated
	if !created {
		status = http.StatusOK
	}
	w.Header().Set("Location", "/v1/runs/"+id)
	s.replyRun(w, r, status, id, wait)
}

// replyRun answers run id's status, and its result when wait > 0 and it
// ends or suspends within wait.
func (s *Server) replyRun(w http.ResponseWriter, r *http.Request, status int, id string, wait time.Duration) {
	if wait <= 0 {
		st, err := s.runs.Wait(r.Context(), id, 0)
		if err != nil {
			s.fail(w, err)
			return
		}
		s.reply(w, status, runReply{RunID: id, Status: st})
		return
	}
	st, res, err := s.runs.WaitResult(r.Context(), id, wait)
	if err != nil {
		s.fail(w, err)
		return
	}
	w.Header().Set("Preference-Applied", "wait="+strconv.Itoa(int(wait/time.Second)))
	s.replyResult(w, status, runReply{RunID: id, Status: st, Result: res})
}

// replyResult is reply(w, status, rr) for a result written compact by its
// own writer (WaitResult), which json.Marshal would only scan again: rr
// is written as json.Marshal writes it, the result as it is
// (TestReplyResultIsMarshal).
func (s *Server) replyResult(w http.ResponseWriter, status int, rr runReply) {
	bp := eventBufs.Get().(*[]byte) // journalbuf.go: w.Write keeps no reference
	defer func() {
		if cap(*bp) <= 64<<10 {
			eventBufs.Put(bp)
		}
	}()
	b := (*bp)[:0]
	b = jsonw.AppendString(append(b, `{"run_id":`...), rr.RunID)
	b = jsonw.AppendString(append(b, `,"status":`...), rr.Status)
	if len(rr.Result) > 0 {
		b = append(append(b, `,"result":`...), rr.Result...)
	}
	b = append(s.runs.redactBytes(append(b, '}')), '\n')
	// Its length, which net/http works out by itself only for an answer
	// of 2 KiB at most: a longer one (a result with its history) went out
	// chunked, in more writes.
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("Content-Length", strconv.Itoa(len(b)))
	w.WriteHeader(status)
	w.Write(b)
	*bp = b[:0]
}

// preferWait reads the wait preference of a Prefer header (RFC 7240):
// "wait=SECONDS", at most max.
func preferWait(r *http.Request, max time.Duration) (time.Duration, error) {
	for _, h := range r.Header.Values("Prefer") {
		for _, p := range strings.Split(h, ",") {
			k, v, ok := strings.Cut(strings.TrimSpace(p), "=")
			if !ok || !strings.EqualFold(strings.TrimSpace(k), "wait") {
				continue
			}
			n, err := strconv.Atoi(strings.Trim(strings.TrimSpace(v), `"`))
			if err != nil || n < 0 {
				return 0, errorf(CodeBadRequest, "Prefer: wait=%s: give a number of seconds", v)
			}
			// compared in seconds: n seconds in nanoseconds may wrap
			if int64(n) >= int64(max/time.Second) {
				return max, nil
			}
			return time.Duration(n) * time.Second, nil
		}
	}
	return 0, nil
}

func (s *Server) apiRuns(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	limit := 100
	if v := q.Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > 1000 {
			s.fail(w, errorf(CodeBadRequest, "limit must be 1 to 1000, got %q", v))
			return
		}
		limit = n
	}
	runs, next, err := s.runs.List(q.Get("ensemble"), q.Get("status"), q.Get("after"), limit)
	if err != nil {
		s.fail(w, err)
		return
	}
	s.reply(w, http.StatusOK, map[string]any{"runs": runs, "next": next})
}

// apiRun answers the run's result, the bytes `state show` prints; its id
// and status are in the headers Ensemble-Run-Id and Ensemble-Run-Status.
func (s *Server) apiRun(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	res, st, err := s.runs.Result(id)
	if err != nil {
		s.fail(w, err)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("Ensemble-Run-Id", id)
	w.Header().Set("Ensemble-Run-Status", st)
	w.Write(res)
}

// apiEvents streams the run's events as Server-Sent Events: each event's
// id is its sequence number (from 1), its data the event's JSON line;
// Last-Event-ID (or ?after=) resumes after one. The stream ends once the
// run does not go on in this server and every event is sent.
func (s *Server) apiEvents(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	after := 0
	last := r.Header.Get("Last-Event-ID")
	if last == "" {
		last = r.URL.Query().Get("after")
	}
	if last != "" {
		n, err := strconv.Atoi(last)
		if err != nil || n < 0 {
			s.fail(w, errorf(CodeBadRequest, "Last-Event-ID %q: give an event's id (a sequence number)", last))
			return
		}
		after = n
	}
	if _, _, _, _, err := s.runs.Events(id, after); err != nil {
		s.fail(w, err)
		return
	}
	flusher := startSSE(w)
	s.follow(w, r, flusher, id, after, nil, func(first int, evs [][]byte) bool {
		for i, ev := range evs {
			if _, err := fmt.Fprintf(w, "id: %d\ndata: %s\n\n", first+i, ev); err != nil {
				return false
			}
		}
		return true
	})
}

// apiAnswers answers a run that waits: {AGENT: ANSWER}, a string the
// answer's text, any other JSON value the output itself. ?turn=N refuses
// answers given for turn N once the run has gone on.
func (s *Server) apiAnswers(w http.ResponseWriter, r *http.Request) {
	var raw map[string]json.RawMessage
	if err := decode(r, &raw); err != nil {
		s.fail(w, err)
		return
	}
	given := map[string]string{}
	for k, v := range raw {
		var text string
		if json.Unmarshal(v, &text) != nil {
			text = string(v)
		}
		given[k] = text
	}
	turn := anyTurn
	if v := r.URL.Query().Get("turn"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			s.fail(w, errorf(CodeBadRequest, "turn must be a turn count (0 or more), got %q", v))
			return
		}
		turn = n
	}
	wait, err := preferWait(r, s.o.MaxWait)
	if err != nil {
		s.fail(w, err)
		return
	}
	id := r.PathValue("id")
	if err := s.runs.answerAt(id, given, turn); err != nil {
		s.fail(w, err)
		return
	}
	s.replyRun(w, r, http.StatusAccepted, id, wait)
}

func (s *Server) apiCancel(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	if err := s.runs.Cancel(id); err != nil {
		s.fail(w, err)
		return
	}
	s.replyRun(w, r, http.StatusOK, id, 0)
}

func (s *Server) apiFork(w http.ResponseWriter, r *http.Request) {
	var b struct {
		FromTurn *int `json:"from_turn"`
	}
	if err := decode(r, &b); err != nil {
		s.fail(w, err)
		return
	}
	if b.FromTurn == nil {
		s.fail(w, errorf(CodeBadRequest, "give from_turn, the turn the fork starts after (0: the run's input)"))
		return
	}
	wait, err := preferWait(r, s.o.MaxWait)
	if err != nil {
		s.fail(w, err)
		return
	}
	id, err := s.runs.Fork(r.PathValue("id"), *b.FromTurn)
	if err != nil {
		s.fail(w, err)
		return
	}
	w.Header().Set("Location", "/v1/runs/"+id)
	s.replyRun(w, r, http.StatusCreated, id, wait)
}

// guard checks every request: its Host header names this server (DNS
// rebinding), its body is capped, CORS answers only the origin allowed,
// and a request of the run API carries the token as Authorization:
// Bearer (the inspector's own requests carry it its way).
func (s *Server) guard(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		r.Body = http.MaxBytesReader(w, r.Body, s.o.MaxBody)
		w, done := s.slowClients(w, r) // slowclient.go
		defer done()
		if !s.hostAllowed(r.Host) {
			refuse(w, r, http.StatusForbidden, "forbidden", fmt.Sprintf("Host %q is not this server's: open it by its address", r.Host))
			return
		}
		w.Header().Set("X-Content-Type-Options", "nosniff")
		if origin := r.Header.Get("Origin"); origin != "" && s.o.CORS != "" && origin == s.o.CORS {
			h := w.Header()
			h.Set("Access-Control-Allow-Origin", origin)
			h.Set("Vary", "Origin")
			h.Set("Access-Control-Allow-Headers", "Authorization, Content-Type, Idempotency-Key, Prefer, Last-Event-ID")
			h.Set("Access-Control-Allow-Methods", "GET, POST")
			h.Set("Access-Control-Expose-Headers", "Location, Ensemble-Run-Id, X-Ensemble-Run-Id, Ensemble-Run-Status, Preference-Applied")
			if r.Method == http.MethodOptions {
				w.WriteHeader(http.StatusNoContent)
				return
			}
		}
		// A trigger webhook authenticates by the HMAC of its body
		// (triggers.go), which GitHub can send and a token it cannot:
		// exactly the paths of the served files' webhooks skip the token,
		// and nothing else lives under /hooks/.
		if under, h := s.isHook(r.URL.Path); under {
			if h == nil {
				refuse(w, r, http.StatusNotFound, CodeNotFound, "no webhook trigger at "+r.URL.Path)
				return
			}
			next.ServeHTTP(w, r)
			return
		}
		// An answer link (notify.go) is its own authentication: its
		// random token, spent by the first answer.
		if strings.HasPrefix(r.URL.Path, answerPrefix) {
			next.ServeHTTP(w, r)
			return
		}
		if s.isAPI(r.URL.Path) && !s.isPublic(r) {
			if !s.authorized(r) {
				w.Header().Set("WWW-Authenticate", `Bearer realm="ensemble"`)
				refuse(w, r, http.StatusUnauthorized, "unauthorized", "missing or wrong token: send Authorization: Bearer TOKEN, the token serve printed")
				return
			}
		}
		next.ServeHTTP(w, r)
	})
}

// authorized reports whether r carries the token: Authorization: Bearer
// TOKEN, the scheme in any case (RFC 7235). The SHA-256 sums are compared,
// in constant time (tokencheck): a wrong token's length tells nothing either.
func (s *Server) authorized(r *http.Request) bool {
	scheme, got, ok := strings.Cut(r.Header.Get("Authorization"), " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return false
	}
	return tokencheck.Equal(strings.TrimSpace(got), s.token)
}

// isAPI reports whether path is the run API's (or a handler's mounted
// beside it, Server.Handle): the inspector's paths check its token their
// way.
func (s *Server) isAPI(path string) bool {
	if strings.HasPrefix(path, "/v1/") || path == "/v1" {
		return true
	}
	for _, p := range s.mounted {
		if strings.HasPrefix(path, p) {
			return true
		}
	}
	return false
}

// hostAllowed reports whether host (a Host header) names this server
// (hostcheck.Allowed), against DNS rebinding.
func (s *Server) hostAllowed(host string) bool {
	return hostcheck.Allowed(host, s.o.Listen, s.o.Hosts)
}
