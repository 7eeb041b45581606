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
	body = rs.redactBytes(body)
	sink := rs.sink(id)
	rs.wg.Add(1)
	go func() {
		defer rs.wg.Done()
		rs.deliver(m.Webhook, body, []byte(secret), sink)
	}()
}

// deliver posts body to u until it is accepted (2xx) or the attempts run
// out, waiting longer after each failure.
func (rs *Runs) deliver(u string, body, secret []byte, sink events.Sink) {
	rs.deliverAs(u, body, secret, sink, func(s string) string { return s })
}

// deliverAs is deliver whose errors, recorded in the run's events, go
// through scrub first: a URL that is itself a secret (a Slack incoming
// webhook's) is never written.
func (rs *Runs) deliverAs(u string, body, secret []byte, sink events.Sink, scrub func(string) string) {
	rs.deliverWith(u, body, secret, nil, sink, scrub)
}

// deliverWith is deliverAs whose requests carry header too.
func (rs *Runs) deliverWith(u string, body, secret []byte, header http.Header, sink events.Sink, scrub func(string) string) {
	wait := rs.o.WebhookBackoff
	for attempt := 1; ; attempt++ {
		code, err := rs.post(u, body, secret, header)
		if err == nil && code/100 == 2 {
			sink.Emit(events.Event{Type: WebhookDelivered, Attempt: attempt, Message: fmt.Sprintf("HTTP %d", code)})
			return
		}
		why := fmt.Sprintf("HTTP %d", code)
		if err != nil {
			why = scrub(rs.redact(err.Error()))
		}
		last := attempt >= rs.o.WebhookAttempts
		if last {
			why += ": giving up"
		}
		sink.Emit(events.Event{Type: WebhookFailed, Attempt: attempt, Error: why})
		if last {
			return
		}
		t := time.NewTimer(wait)
		select {
		case <-t.C:
		case <-rs.ctx.Done():
			t.Stop()
			return
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
