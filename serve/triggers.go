package serve

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"mime"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/ensemble-run/ensemble/ensemble"
	"github.com/ensemble-run/ensemble/internal/jsonvalue"
	"github.com/ensemble-run/ensemble/store"
)

// The triggers of the served files (docs/serve.md#triggers): cron
// schedules, each fire claimed in the state database by the one server
// process that starts its run, and webhooks at /hooks/..., authenticated
// by the HMAC of their body instead of the server's token.

// HookSignatureHeader is the header of a trigger webhook's signature:
// "sha256=" and the hex HMAC-SHA256 of the body with the trigger's secret,
// as GitHub sends it.
const HookSignatureHeader = "X-Hub-Signature-256"

// hookPrefix is where trigger webhooks live; no other route may.
const hookPrefix = "/hooks/"

// hook is a webhook trigger of a served file.
type hook struct {
	ensemble string
	t        *ensemble.WebhookTrigger
	secret   []byte
	where    string // FILE:LINE:COL of the trigger
}

// cronJob is a cron trigger of a served file, as the scheduler keeps it.
type cronJob struct {
	ensemble string
	key      string
	c        *ensemble.CronTrigger
	// baseline: the later of when the trigger was first watched and its
	// latest claimed fire, read at New; a fire after it and before Serve
	// was missed.
	baseline time.Time
	last     *store.Fire
	next     time.Time
}

// setupTriggers reads the triggers of the served files: each webhook's
// path (unique among them) and secret, each cron trigger's baseline,
// recorded in the state database.
func (s *Server) setupTriggers(list []*served) error {
	s.hooks = map[string]*hook{}
	now := s.o.Clock()
	for _, sv := range list {
		for _, t := range sv.e.Triggers {
			where := fmt.Sprintf("%s:%d:%d", sv.e.Path, t.Pos.Line, t.Pos.Column)
			switch {
			case t.Hook != nil:
				if first := s.hooks[t.Hook.Path]; first != nil {
					return fmt.Errorf("%s: webhook path %s is also that of the trigger at %s: give each its own", where, t.Hook.Path, first.where)
				}
				secret, _ := s.o.LookupEnv(t.Hook.SecretEnv)
				if secret == "" {
					return fmt.Errorf("%s: webhook %s: $%s is not set: it holds the secret its requests are signed with", where, t.Hook.Path, t.Hook.SecretEnv)
				}
				s.hooks[t.Hook.Path] = &hook{ensemble: sv.e.Name, t: t.Hook, secret: []byte(secret), where: where}
			case t.Cron != nil:
				j := &cronJob{ensemble: sv.e.Name, key: t.Key, c: t.Cron}
				since, last, err := s.runs.watchTrigger(j.ensemble, j.key, now)
				if err != nil {
					return fmt.Errorf("%s: %w", where, err)
				}
				j.baseline, j.last = since, last
				if last != nil && last.Time.After(since) {
					j.baseline = last.Time
				}
				s.crons = append(s.crons, j)
			}
		}
	}
	for path, h := range s.hooks {
		s.mux.HandleFunc("POST "+path, s.serveHook(h))
	}
	return nil
}

func (rs *Runs) watchTrigger(ensembleName, key string, now time.Time) (time.Time, *store.Fire, error) {
	rs.wdb.Hold()
	defer rs.wdb.Release()
	return rs.wdb.WatchTrigger(ensembleName, key, now)
}

// fireRunID is the id of the run a cron fire starts: the same in every
// process, so that no two can start it under two ids.
func fireRunID(ensembleName, key string, fire time.Time) string {
	h := sha256.Sum256([]byte(key))
	name := ensembleName
	if len(name) > 30 {
		name = name[:30]
	}
	return fmt.Sprintf("cron-%s-%x-%s", name, h[:4], fire.UTC().Format("20060102T1504Z"))
}

// startTriggers starts the scheduler of the cron triggers: first the
// latest fire missed since each was last watched (only that one), then
// each fire as it comes. It returns a function that stops it and waits.
func (s *Server) startTriggers(ctx context.Context) (stop func()) {
	if len(s.crons) == 0 {
		return func() {}
	}
	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	now := s.o.Clock()
	for _, j := range s.crons {
		missed := j.c.Schedule.Latest(j.baseline, now, j.c.Location)
		switch {
		case !missed.IsZero():
			s.fire(j, missed, now)
		case j.last != nil && now.Sub(j.last.Claimed) > time.Minute:
			// A fire claimed by a server killed before its run was saved.
			if _, err := s.runs.info(j.last.RunID); err != nil {
				s.startFire(j, j.last.Time, j.last.RunID)
			}
		}
		j.next = j.c.Schedule.Next(now, j.c.Location)
	}
	wg.Go(func() {
		for {
			var next time.Time
			for _, j := range s.crons {
				if !j.next.IsZero() && (next.IsZero() || j.next.Before(next)) {
					next = j.next
				}
			}
			wait := s.o.TriggerPoll
			if !next.IsZero() {
				wait = min(wait, max(next.Sub(s.o.Clock()), 0))
			}
			t := time.NewTimer(wait)
			select {
			case <-ctx.Done():
				t.Stop()
				return
			case <-t.C:
			}
			now := s.o.Clock()
			for _, j := range s.crons {
				if j.next.IsZero() || now.Before(j.next) {
					continue
				}
				// Only the latest fire when the clock jumped past several.
				s.fire(j, j.c.Schedule.Latest(j.next.Add(-time.Second), now, j.c.Location), now)
				j.next = j.c.Schedule.Next(now, j.c.Location)
			}
		}
	})
	return func() { cancel(); wg.Wait() }
}

// fire claims the fire of j at t and, when this process wins it, starts
// its run.
func (s *Server) fire(j *cronJob, t, now time.Time) {
	id := fireRunID(j.ensemble, j.key, t)
	s.runs.wdb.Hold()
	won, err := s.runs.wdb.ClaimFire(j.ensemble, j.key, t, id, now)
	s.runs.wdb.Release()
	switch {
	case err != nil:
		s.runs.logf("trigger %q of %s: claiming its fire of %s: %s", j.key, j.ensemble, t.UTC().Format(time.RFC3339), err)
	case won:
		s.startFire(j, t, id)
	}
}

func (s *Server) startFire(j *cronJob, t time.Time, id string) {
	if _, _, err := s.runs.Start(s.runs.ctx, j.ensemble, j.c.Input, StartOptions{RunID: id}); err != nil {
		s.runs.logf("trigger %q of %s: its fire of %s did not start run %s: %s", j.key, j.ensemble, t.UTC().Format(time.RFC3339), id, s.runs.redact(err.Error()))
		return
	}
	s.runs.logf("trigger %q of %s fired (%s): run %s", j.key, j.ensemble, t.UTC().Format(time.RFC3339), id)
}

// validSignature reports whether header is "sha256=" and the hex
// HMAC-SHA256 of body with secret, compared in constant time.
func validSignature(secret, body []byte, header string) bool {
	got, ok := strings.CutPrefix(strings.TrimSpace(header), "sha256=")
	if !ok {
		return false
	}
	sum, err := hex.DecodeString(got)
	if err != nil {
		return false
	}
	m := hmac.New(sha256.New, secret)
	m.Write(body)
	return hmac.Equal(sum, m.Sum(nil))
}

// hookReply is a webhook trigger's answer.
type hookReply struct {
	RunID    string `json:"run_id,omitempty"`
	Ensemble string `json:"ensemble"`
	Status   string `json:"status"`
}

// serveHook answers a POST to a webhook trigger's path: its signature
// checked (401), its body capped (413, by guard), its input rendered
// (422 when the template fails on it), its run started (202).
func (s *Server) serveHook(h *hook) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(r.Body)
		if err != nil {
			s.fail(w, err)
			return
		}
		if !validSignature(h.secret, body, r.Header.Get(HookSignatureHeader)) {
			writeError(w, http.StatusUnauthorized, "unauthorized", fmt.Sprintf(
				"missing or wrong %s: sign the body with HMAC-SHA256 and the secret of $%s, sent as sha256=HEX", HookSignatureHeader, h.t.SecretEnv))
			return
		}
		if r.Header.Get("X-GitHub-Event") == "ping" { // a new GitHub webhook's test
			s.reply(w, http.StatusOK, hookReply{Ensemble: h.ensemble, Status: "pong"})
			return
		}
		input, err := h.render(r, body)
		if err != nil {
			writeError(w, http.StatusUnprocessableEntity, CodeBadRequest, s.runs.redact(err.Error()))
			return
		}
		key := ""
		if d := r.Header.Get("X-GitHub-Delivery"); d != "" {
			key = "hook " + h.t.Path + " " + d // a redelivery is the same run
		}
		id, created, err := s.runs.Start(r.Context(), h.ensemble, &input, StartOptions{IdempotencyKey: key})
		if err != nil {
			s.fail(w, err)
			return
		}
		status := http.StatusAccepted
		if !created {
			status = http.StatusOK
		}
		w.Header().Set("Location", "/v1/runs/"+id)
		info, _ := s.runs.info(id)
		reason := ""
		if info != nil {
			reason = info.CompletionReason
		}
		s.reply(w, status, hookReply{RunID: id, Ensemble: h.ensemble, Status: s.runs.status(id, reason)})
	}
}

// render is the run's input for a request to h: its template over the
// body (JSON decoded; a form's payload field, as GitHub sends with
// application/x-www-form-urlencoded; otherwise the text) and the headers
// (lower-case names, each its first value); the body's text without a
// template.
func (h *hook) render(r *http.Request, raw []byte) (string, error) {
	var body any = string(raw)
	ct, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
	data := raw
	if ct == "application/x-www-form-urlencoded" {
		form, err := url.ParseQuery(string(raw))
		if err != nil {
			return "", fmt.Errorf("the form body does not parse: %v", err)
		}
		data = []byte(form.Get("payload"))
		body = form.Get("payload")
	}
	if json.Valid(data) {
		if err := json.Unmarshal(data, &body); err != nil {
			return "", err
		}
	} else if ct == "application/json" {
		return "", errors.New("the body is not JSON, as its Content-Type says")
	}
	if h.t.Input == nil {
		return string(data), nil
	}
	headers := make(map[string]any, len(r.Header))
	for k, v := range r.Header {
		if len(v) > 0 {
			headers[strings.ToLower(k)] = v[0]
		}
	}
	ctx, cancel := context.WithTimeout(r.Context(), 10*time.Second)
	defer cancel()
	v, err := h.t.Input.EvalRequest(ctx, body, headers)
	if err != nil {
		return "", fmt.Errorf("webhook %s: its input (%s) failed on this request: %v", h.t.Path, h.where, err)
	}
	return jsonvalue.Text(v), nil
}

// isHook reports whether path is under /hooks/, and the trigger webhook
// there (nil when none).
func (s *Server) isHook(path string) (bool, *hook) {
	if !strings.HasPrefix(path, hookPrefix) {
		return false, nil
	}
	return true, s.hooks[path]
}

// Triggers describes the triggers the server runs, a line each, for its
// start: `cron "0 9 * * 1-5" Europe/Berlin starts review`, `POST
// /hooks/pr starts review`.
func (s *Server) Triggers() []string {
	var out []string
	for _, j := range s.crons {
		out = append(out, fmt.Sprintf("cron %q %s starts %s", j.c.Spec, j.c.Timezone, j.ensemble))
	}
	for _, path := range slices.Sorted(maps.Keys(s.hooks)) {
		out = append(out, fmt.Sprintf("POST %s starts %s", path, s.hooks[path].ensemble))
	}
	return out
}
