package serve

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"time"

	"github.com/ensemble-run/ensemble/events"
)

// WebhookSecretEnv names the variable whose value signs webhook deliveries
// (HMAC-SHA256 of the body, in the header SignatureHeader as
// "sha256=HEX"). A run with a webhook is refused without it.
const WebhookSecretEnv = "ENSEMBLE_WEBHOOK_SECRET"

// SignatureHeader is the header of a delivery's signature.
const SignatureHeader = "X-Ensemble-Signature"

// The event types of webhook deliveries, recorded in the run's events
// beside the engine's.
const (
	WebhookDelivered events.Type = "webhook_delivered"
	WebhookFailed    events.Type = "webhook_failed"
)

// Webhook is the body of a delivery.
type Webhook struct {
	RunID    string          `json:"run_id"`
	Ensemble string          `json:"ensemble"`
	Status   string          `json:"status"`
	Result   json.RawMessage `json:"result"`
}

// Sign is the signature header value of body with secret.
func Sign(secret, body []byte) string {
	m := hmac.New(sha256.New, secret)
	m.Write(body)
	return "sha256=" + hex.EncodeToString(m.Sum(nil))
}

// checkWebhook refuses a webhook URL that is not http(s), or any webhook
// when no secret signs them.
func (rs *Runs) checkWebhook(u string) error {
	p, err := url.Parse(u)
	if err != nil || (p.Scheme != "http" && p.Scheme != "https") || p.Host == "" {
		return errorf(CodeBadRequest, "webhook %q: give an http:// or https:// URL", u)
	}
	if v, _ := rs.o.LookupEnv(WebhookSecretEnv); v == "" {
		return errorf(CodeBadRequest, "webhook: $%s is not set on the server: deliveries would go unsigned", WebhookSecretEnv)
	}
	return nil
}

// hook posts to run id's webhook, if it has one, that it suspended or
// ended (cancelled: by a caller), in the
// background, retried with backoff, each attempt recorded in its events.
func (rs *Runs) hook(id string, cancelled bool) {
	m := rs.j.meta(id)
	if m == nil || m.Webhook == "" {
		return
	}
	secret, _ := rs.o.LookupEnv(WebhookSecretEnv)
	if secret == "" {
		rs.logf("run %s: no webhook delivery: $%s is not set", id, WebhookSecretEnv)
		return
	}
	res, status, err := rs.Result(id)
	if err != nil {
		rs.logf("run %s: webhook: %s", id, rs.redact(err.Error()))
		return
	}
	if cancelled {
		status = StatusCancelled
	}
	body, _ := json.Marshal(Webhook{RunID: id, Ensemble: m.Ensemble, Status: status, Result: json.RawMessage(res)})
	p := &outgoing{Run: id, URL: m.Webhook, SecretEnv: WebhookSecretEnv, Body: rs.redactBytes(body)}
	rs.wg.Add(1)
	go func() {
		defer rs.wg.Done()
		rs.send(p) // outbox.go
	}()
}

// deliverWith posts p's body to target, signed with secret, until it is
// accepted (2xx) or its attempts run out, waiting longer after each
// failure; each attempt is an event of sink, its error through scrub
// first (a URL that is itself a secret, a Slack incoming webhook's, is
// never written). It counts p's attempts, kept in the outbox, and reports
// whether the delivery is done: false when the server stopped first.
func (rs *Runs) deliverWith(p *outgoing, target string, secret []byte, sink events.Sink, scrub func(string) string) bool {
	wait := rs.o.WebhookBackoff
	for range p.Attempts { // the waits of the attempts a server before this one made
		wait = min(2*wait, 30*time.Second)
	}
	for attempt := p.Attempts + 1; ; attempt++ {
		code, err := rs.post(target, p.Body, secret, p.Header)
		if err == nil && code/100 == 2 {
			sink.Emit(events.Event{Type: WebhookDelivered, Attempt: attempt, Message: fmt.Sprintf("HTTP %d", code)})
			return true
		}
		if rs.ctx.Err() != nil {
			return false // cut short by the stop: attempted again after a restart
		}
		why := fmt.Sprintf("HTTP %d", code)
		if err != nil {
			why = scrub(rs.redact(err.Error()))
		}
		// A server started again makes one attempt at least.
		last := attempt >= max(rs.o.WebhookAttempts, p.Attempts+1)
		if last {
			why += ": giving up"
		}
		sink.Emit(events.Event{Type: WebhookFailed, Attempt: attempt, Error: why})
		if last {
			return true
		}
		p.Attempts = attempt
		rs.keep(p)
		t := time.NewTimer(wait)
		select {
		case <-t.C:
		case <-rs.ctx.Done():
			t.Stop()
			return false
		}
		wait = min(2*wait, 30*time.Second)
	}
}

// webhookClient posts deliveries and follows no redirect: a 3xx is the
// receiver's answer, a failed attempt. Followed, a 307 would send the body
// and its signature on to wherever the receiver names, an address inside
// the network too.
var webhookClient = &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error {
	return http.ErrUseLastResponse
}}

func (rs *Runs) post(u string, body, secret []byte, header http.Header) (int, error) {
	ctx, cancel := context.WithTimeout(rs.ctx, 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u, bytes.NewReader(body))
	if err != nil {
		return 0, err
	}
	for k, v := range header {
		req.Header[k] = v
	}
	req.Header.Set("Content-Type", "application/json")
	if secret != nil {
		req.Header.Set(SignatureHeader, Sign(secret, body))
	}
	resp, err := webhookClient.Do(req)
	if err != nil {
		return 0, err
	}
	io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	resp.Body.Close()
	return resp.StatusCode, nil
}
