package llm

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"mime"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// endpoint sends the requests of one provider to one URL, with the retries
// of docs/llm.md#retries. The providers speak their APIs over it with
// encoding/json; docs/performance.md says why there is no SDK under it.
type endpoint struct {
	provider string // for messages: openai, ollama or anthropic
	client   *http.Client
	url      string // the whole URL, base_url's query included
	header   http.Header
	// maxRetries is how often a transient failure is retried.
	maxRetries int
	// timeout bounds each attempt, its reply included; 0: none.
	timeout time.Duration
	// retryTimeouts retries an attempt that timed out like a connection
	// error (Anthropic); otherwise the request fails at once (OpenAI).
	retryTimeouts bool
	// maxBackoff caps the exponential backoff.
	maxBackoff time.Duration
	// maxRetryAfter is the longest Retry-After waited for: a longer one
	// fails the request at once with the response's error. 0 waits for any.
	maxRetryAfter time.Duration
	// maxReply caps the body of one reply.
	maxReply int64
	// apiError is the error of an error response.
	apiError func(status int, body []byte) error
	// options are the profile's options, encoded (encodeOptions): added
	// to every request body.
	options []byte
}

// defaultMaxBackoff caps the backoff between retries.
const defaultMaxBackoff = 8 * time.Second

// maxErrorBody caps what is read of an error response.
const maxErrorBody = 1 << 20

// newEndpoint is the endpoint at url of cfg's provider.
func newEndpoint(cfg providerConfig, provider, url string, header http.Header) *endpoint {
	if len(cfg.query) > 0 {
		url += "?" + cfg.query.Encode()
	}
	header.Set("Content-Type", "application/json")
	header.Set("User-Agent", "ensemble")
	client := cfg.httpClient
	if client == nil {
		client = DefaultHTTPClient()
	}
	options, _ := encodeOptions(cfg.profile) // checked by resolveProfile
	return &endpoint{
		provider:   provider,
		client:     sameHostRedirects(client),
		url:        url,
		header:     header,
		maxRetries: cfg.maxRetries,
		timeout:    cfg.profile.Timeout,
		maxBackoff: cmp.Or(cfg.maxRetryDelay, defaultMaxBackoff),
		maxReply:   cmp.Or(cfg.maxReply, MaxReply),
		options:    options,
	}
}

// body is params as JSON, the profile's options added at its top level:
// params is an object whose members are all reserved fields, which no
// option names, so no member is repeated.
func (ep *endpoint) body(params any) ([]byte, error) {
	b, err := json.Marshal(params)
	if err != nil || len(ep.options) == 0 {
		return b, err
	}
	if n := len(b); n < 2 || b[n-1] != '}' {
		return nil, fmt.Errorf("a request body is not a JSON object")
	}
	if len(b) == 2 { // {}: no member to follow
		return append(append([]byte{'{'}, ep.options[1:]...), '}'), nil
	}
	return append(append(b[:len(b)-1], ep.options...), '}'), nil
}

// sameHostRedirects is client, following a redirect only to the same host:
// a request carries the key in a header that net/http would send on to
// another host (it drops only Authorization and cookies).
func sameHostRedirects(client *http.Client) *http.Client {
	c := *client
	next := client.CheckRedirect
	c.CheckRedirect = func(req *http.Request, via []*http.Request) error {
		if len(via) > 0 && !strings.EqualFold(req.URL.Host, via[0].URL.Host) {
			return http.ErrUseLastResponse
		}
		if next != nil {
			return next(req, via)
		}
		if len(via) >= 10 {
			return errors.New("stopped after 10 redirects")
		}
		return nil
	}
	return &c
}

// post sends body until an attempt ends the request. Without stream, it
// returns the reply's body, read as part of the attempt (a reply cut off is
// retried). With stream, the reply's body goes to stream, whose error ends
// the request: a reply already under way is never retried.
func (ep *endpoint) post(ctx context.Context, body []byte, stream func(io.Reader) error) ([]byte, error) {
	for attempt := 0; ; attempt++ {
		reply, err, retry, wait := ep.try(ctx, body, stream, attempt)
		if err == nil {
			return reply, nil
		}
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		if !retry || attempt >= ep.maxRetries {
			return nil, err
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, ctx.Err()
		case <-t.C:
		}
	}
}

// try makes one attempt: the reply, or the error with whether it may be
// retried and after how long.
func (ep *endpoint) try(ctx context.Context, body []byte, stream func(io.Reader) error, attempt int) (reply []byte, err error, retry bool, wait time.Duration) {
	actx, cancel := ctx, context.CancelFunc(func() {})
	if ep.timeout > 0 {
		actx, cancel = context.WithTimeout(ctx, ep.timeout)
	}
	defer cancel()
	wait = backoff(attempt, ep.maxBackoff)
	// timedOut is the error of an attempt that its own timeout ended.
	timedOut := func(err error) (bool, error) {
		if err != nil && ctx.Err() == nil && errors.Is(actx.Err(), context.DeadlineExceeded) {
			return true, context.DeadlineExceeded
		}
		return false, err
	}
	req, err := http.NewRequestWithContext(actx, http.MethodPost, ep.url, bytes.NewReader(body))
	if err != nil {
		return nil, err, false, 0
	}
	req.Header = ep.header.Clone()
	if stream != nil {
		req.Header.Set("Accept", "text/event-stream")
	} else {
		req.Header.Set("Accept", "application/json")
	}
	res, err := ep.client.Do(req)
	if err != nil {
		if to, err := timedOut(err); to {
			return nil, err, ep.retryTimeouts, wait
		}
		return nil, err, true, wait
	}
	defer res.Body.Close()
	capped := &cappedBody{body: res.Body, left: ep.maxReply, limit: ep.maxReply}
	if res.StatusCode/100 != 2 {
		b, rerr := io.ReadAll(io.LimitReader(capped, maxErrorBody))
		if rerr != nil && len(b) == 0 {
			if to, err := timedOut(rerr); to {
				return nil, err, ep.retryTimeouts, wait
			}
		}
		retry = shouldRetry(res, b)
		if d, ok := retryAfter(res.Header); ok {
			if ep.maxRetryAfter > 0 && d > ep.maxRetryAfter {
				retry = false
			}
			wait = d
		}
		return nil, ep.apiError(res.StatusCode, b), retry, wait
	}
	if stream != nil && !answeredWhole(res.Header) {
		err = stream(capped)
		if _, err := timedOut(err); err != nil {
			return nil, err, false, 0
		}
		return nil, nil, false, 0
	}
	reply, err = io.ReadAll(capped)
	if err != nil {
		var tooLarge *errReplyTooLarge
		if errors.As(err, &tooLarge) {
			return nil, err, false, 0
		}
		if to, err := timedOut(err); to {
			return nil, err, ep.retryTimeouts, wait
		}
		return nil, fmt.Errorf("reading the reply: %w", err), true, wait
	}
	return reply, nil, false, 0
}

// exchange posts params as JSON and decodes the reply into a T; what
// names the reply in an error ("a chat completion").
func exchange[T any](ctx context.Context, ep *endpoint, params any, what string) (*T, error) {
	body, err := ep.body(params)
	if err != nil {
		return nil, err
	}
	reply, err := ep.post(ctx, body, nil)
	if err != nil {
		return nil, err
	}
	var out T
	if err := json.Unmarshal(reply, &out); err != nil {
		return nil, fmt.Errorf("the reply is not %s: %w", what, err)
	}
	return &out, nil
}

// streamEvents posts params as JSON for a streamed reply, and hands each
// of its server-sent events to event (see sse). A server that ignores the
// request to stream and answers with one JSON body (some proxies and
// compatible servers do) has that body returned as whole, for the caller
// to decode as an unstreamed reply.
func (ep *endpoint) streamEvents(ctx context.Context, params any, event func(name string, data []byte) (bool, error)) (whole []byte, err error) {
	body, err := ep.body(params)
	if err != nil {
		return nil, err
	}
	events := 0
	whole, err = ep.post(ctx, body, func(r io.Reader) error {
		return sse(r, func(name string, data []byte) (bool, error) {
			events++
			return event(name, data)
		})
	})
	if err == nil && whole == nil && events == 0 {
		return nil, &providerError{msg: ep.provider + ": the server answered a streamed request without server-sent events; drop --stream"}
	}
	return whole, err
}

// answeredWhole reports whether a reply to a streamed request is one JSON
// body rather than server-sent events.
func answeredWhole(h http.Header) bool {
	media, _, err := mime.ParseMediaType(h.Get("Content-Type"))
	return err == nil && (media == "application/json" || strings.HasSuffix(media, "+json"))
}

// wrap is the error the run reports of a failed request: "cancelled" when
// ctx ended, the provider's own error, or the transport's.
func (ep *endpoint) wrap(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return cancelled(ctx)
	}
	if _, ok := err.(*providerError); ok {
		return err
	}
	return wrapTransportError(ep.provider, err)
}

// shouldRetry reports whether the error response res (its body read into
// body) is transient: 408, 409, 429 and 5xx are, unless the server says
// otherwise in x-should-retry, or the 429 is an exhausted quota (waiting
// does not help).
func shouldRetry(res *http.Response, body []byte) bool {
	switch res.Header.Get("x-should-retry") {
	case "true":
		return true
	case "false":
		return false
	}
	if res.StatusCode == http.StatusTooManyRequests && isQuotaError(string(body)) {
		return false
	}
	return res.StatusCode == http.StatusRequestTimeout || res.StatusCode == http.StatusConflict ||
		res.StatusCode == http.StatusTooManyRequests || res.StatusCode >= 500
}

func isQuotaError(body string) bool {
	return strings.Contains(body, "insufficient_quota") || strings.Contains(body, "billing_hard_limit_reached")
}

// backoff is the wait before retry attempt+1: 0.5 s doubling, capped at
// limit, minus up to a quarter of jitter.
func backoff(attempt int, limit time.Duration) time.Duration {
	d := limit
	if attempt < 30 {
		d = min(500*time.Millisecond<<attempt, limit)
	}
	if j := int64(d / 4); j > 0 {
		d -= time.Duration(rand.Int64N(j))
	}
	return d
}

// retryAfter is the wait a response asks for: retry-after-ms, or
// Retry-After in seconds or as an HTTP date.
func retryAfter(h http.Header) (time.Duration, bool) {
	if v := h.Get("Retry-After-Ms"); v != "" {
		if ms, err := strconv.ParseFloat(v, 64); err == nil && ms >= 0 && !math.IsInf(ms, 0) {
			return duration(ms * float64(time.Millisecond)), true
		}
	}
	v := h.Get("Retry-After")
	if v == "" {
		return 0, false
	}
	if s, err := strconv.ParseFloat(v, 64); err == nil || errors.Is(err, strconv.ErrRange) {
		if s >= 0 && !math.IsNaN(s) {
			return duration(s * float64(time.Second)), true
		}
		return 0, false
	}
	if t, err := http.ParseTime(v); err == nil {
		return max(0, time.Until(t)), true
	}
	return 0, false
}

// duration converts nanoseconds, saturating.
func duration(ns float64) time.Duration {
	if ns >= math.MaxInt64 {
		return math.MaxInt64
	}
	return time.Duration(ns)
}

// sse reads server-sent events from r, calling event with each event's
// name and data, until event returns done or an error, or r ends.
func sse(r io.Reader, event func(name string, data []byte) (done bool, err error)) error {
	br := bufio.NewReader(r)
	var name string
	var data []byte
	for {
		line, err := br.ReadBytes('\n')
		if err != nil && (err != io.EOF || len(line) == 0) {
			if err == io.EOF {
				return nil
			}
			return err
		}
		line = bytes.TrimRight(line, "\r\n")
		if len(line) == 0 { // the end of an event
			if len(data) > 0 || name != "" {
				if done, err := event(name, data); done || err != nil {
					return err
				}
			}
			name, data = "", data[:0]
			continue
		}
		field, value, _ := bytes.Cut(line, []byte(":"))
		value = bytes.TrimPrefix(value, []byte(" "))
		switch string(field) {
		case "event":
			name = string(value)
		case "data":
			if len(data) > 0 {
				data = append(data, '\n')
			}
			data = append(data, value...)
		}
	}
}

// count is a token count as a server reports it: any JSON number (or
// none), never negative, saturating at math.MaxInt64.
type count int64

func (c *count) UnmarshalJSON(b []byte) error {
	s := string(bytes.TrimSpace(b))
	if n, err := strconv.ParseInt(s, 10, 64); err == nil {
		*c = count(max(n, 0))
		return nil
	}
	f, err := strconv.ParseFloat(s, 64)
	switch {
	case err != nil && !errors.Is(err, strconv.ErrRange), math.IsNaN(f), f <= 0:
		*c = 0
	case f >= math.MaxInt64:
		*c = math.MaxInt64
	default:
		*c = count(f)
	}
	return nil
}

// text is message content as a server sends it: a string, or (some
// compatible servers) a list of parts whose texts are joined; anything
// else is no text.
type text string

func (t *text) UnmarshalJSON(b []byte) error {
	var s string
	if json.Unmarshal(b, &s) == nil {
		*t = text(s)
		return nil
	}
	var parts []struct {
		Text string `json:"text"`
	}
	if json.Unmarshal(b, &parts) == nil {
		var sb strings.Builder
		for _, p := range parts {
			sb.WriteString(p.Text)
		}
		*t = text(sb.String())
		return nil
	}
	*t = ""
	return nil
}
