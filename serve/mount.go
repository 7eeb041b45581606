package serve

import (
	"net/http"
	"slices"

	"github.com/ensemble-run/ensemble/store"
)

// What a front door mounted beside the run API (A2A's, package a2aserve)
// needs of the server beyond Runs' run machinery: public routes, the state
// database, and webhook deliveries of its own.

// HandlePublic mounts h at pattern (a ServeMux pattern) beside the run
// API without the token: what anyone who reaches the server may read (A2A
// agent cards, which clients fetch before they know how to authenticate).
// The Host check and the body cap still apply; a public pattern wins over
// a path Handle mounted. Call it before Serve.
func (s *Server) HandlePublic(pattern string, h http.Handler) {
	if s.public == nil {
		s.public = http.NewServeMux()
	}
	s.mux.Handle(pattern, h)
	s.public.Handle(pattern, h)
}

// isPublic reports whether r goes to a handler of HandlePublic.
func (s *Server) isPublic(r *http.Request) bool {
	if s.public == nil {
		return false
	}
	_, pattern := s.public.Handler(r)
	return pattern != ""
}

// WithDB calls f with the server's connection to its state database,
// which nothing else uses meanwhile (f must not keep it): for what a
// mounted front door keeps there of its own. It fails once the server has
// closed.
func (rs *Runs) WithDB(f func(db *store.DB) error) error {
	rs.wdb.Hold()
	defer rs.wdb.Release()
	return f(rs.wdb)
}

// CheckWebhook refuses a URL that a run's webhook could not be: not
// http(s), or any URL when $ENSEMBLE_WEBHOOK_SECRET is not set (its
// deliveries would go unsigned).
func (rs *Runs) CheckWebhook(u string) error { return rs.checkWebhook(u) }

// Deliver posts body (JSON, redacted here) to u about run id as a run's
// webhook is posted: signed with $ENSEMBLE_WEBHOOK_SECRET (SignatureHeader),
// retried with backoff, each attempt recorded in the run's events
// (webhook_delivered, webhook_failed); header is added to each request. It
// returns at once; the deliveries of one run are made one after the other,
// in the order they were given.
func (rs *Runs) Deliver(id, u string, body []byte, header http.Header) error {
	if secret, _ := rs.o.LookupEnv(WebhookSecretEnv); secret == "" {
		return errorf(CodeBadRequest, "webhook: $%s is not set on the server: deliveries would go unsigned", WebhookSecretEnv)
	}
	p := &outgoing{Run: id, URL: u, SecretEnv: WebhookSecretEnv, Header: header, Body: rs.redactBytes(body)}
	rs.mu.Lock()
	if rs.closing {
		rs.mu.Unlock()
		return errorf(CodeClosing, "the server is shutting down: no delivery")
	}
	rs.wg.Add(1)
	rs.mu.Unlock()
	done := make(chan struct{})
	prev, _ := rs.deliveries.Swap(id, done)
	go func() {
		defer rs.wg.Done()
		defer func() {
			close(done)
			rs.deliveries.CompareAndDelete(id, done)
		}()
		if prev != nil {
			select {
			case <-prev.(chan struct{}):
			case <-rs.ctx.Done():
				return
			}
		}
		rs.send(p) // outbox.go
	}()
	return nil
}

// OnEnd adds f, called with the id of every run this server goes on with
// once it ends or suspends (in the background, after its webhook is
// sent), whichever door started or answered it: what a mounted door keeps
// of its runs catches up with them. Call it before Serve.
func (rs *Runs) OnEnd(f func(id string)) {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	rs.onEnd = append(rs.onEnd, f)
}

func (rs *Runs) ended(id string) {
	rs.mu.Lock()
	fs := slices.Clone(rs.onEnd)
	rs.mu.Unlock()
	for _, f := range fs {
		f(id)
	}
}
