package telemetry

import (
	"bytes"
	"compress/gzip"
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"go.opentelemetry.io/otel/exporters/otlp/otlptrace"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	"github.com/ensemble-run/ensemble/internal/readcap"
)

// client posts spans to a collector over OTLP/HTTP, protobuf-encoded: what
// the SDK's otlptracehttp does, without its dependency on the collector's
// generated gRPC service (the request message, a repeated field 1 of
// ResourceSpans, is written here), which compiled gRPC and its gateway
// into every build of ensemble for a protocol it does not speak.
//
// It reads the standard variables as the SDK's exporter did, from the
// process's environment: OTEL_EXPORTER_OTLP_[TRACES_]HEADERS, _TIMEOUT,
// _COMPRESSION, _CERTIFICATE, _CLIENT_CERTIFICATE and _CLIENT_KEY.
type client struct {
	endpoint string
	headers  map[string]string
	timeout  time.Duration
	gzip     bool
	http     *http.Client
}

var _ otlptrace.Client = (*client)(nil)

// maxErrorBody caps what is read of a refused export's body, for its
// error.
const maxErrorBody = 4 << 10

// newClient is the client for endpoint, configured from the environment.
func newClient(endpoint string) (*client, error) {
	env := func(name string) string {
		if v := strings.TrimSpace(os.Getenv("OTEL_EXPORTER_OTLP_TRACES_" + name)); v != "" {
			return v
		}
		return strings.TrimSpace(os.Getenv("OTEL_EXPORTER_OTLP_" + name))
	}
	c := &client{endpoint: endpoint, headers: map[string]string{}, timeout: 10 * time.Second}
	for _, kv := range strings.Split(env("HEADERS"), ",") {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || strings.TrimSpace(k) == "" {
			continue
		}
		if dv, err := url.PathUnescape(strings.TrimSpace(v)); err == nil {
			v = dv
		}
		c.headers[strings.TrimSpace(k)] = strings.TrimSpace(v)
	}
	if v := env("TIMEOUT"); v != "" {
		ms, err := strconv.Atoi(v)
		if err != nil || ms <= 0 {
			return nil, fmt.Errorf("OTEL_EXPORTER_OTLP_TIMEOUT=%s: want milliseconds, such as 10000", v)
		}
		c.timeout = time.Duration(ms) * time.Millisecond
	}
	switch v := strings.ToLower(env("COMPRESSION")); v {
	case "", "none":
	case "gzip":
		c.gzip = true
	default:
		return nil, fmt.Errorf("OTEL_EXPORTER_OTLP_COMPRESSION=%s: want gzip or none", v)
	}
	tlsConfig := &tls.Config{MinVersion: tls.VersionTLS12}
	if ca := env("CERTIFICATE"); ca != "" {
		pem, err := readcap.ReadFile(ca, 16<<20)
		if err != nil {
			return nil, fmt.Errorf("OTEL_EXPORTER_OTLP_CERTIFICATE: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("OTEL_EXPORTER_OTLP_CERTIFICATE: %s holds no PEM certificate", ca)
		}
		tlsConfig.RootCAs = pool
	}
	if cert, key := env("CLIENT_CERTIFICATE"), env("CLIENT_KEY"); cert != "" || key != "" {
		pair, err := tls.LoadX509KeyPair(cert, key)
		if err != nil {
			return nil, fmt.Errorf("OTEL_EXPORTER_OTLP_CLIENT_CERTIFICATE and _CLIENT_KEY: %w", err)
		}
		tlsConfig.Certificates = []tls.Certificate{pair}
	}
	transport := http.DefaultTransport.(*http.Transport).Clone()
	transport.TLSClientConfig = tlsConfig
	c.http = &http.Client{Transport: transport}
	return c, nil
}

func (c *client) Start(context.Context) error { return nil }

func (c *client) Stop(context.Context) error {
	c.http.CloseIdleConnections()
	return nil
}

// UploadTraces posts one ExportTraceServiceRequest holding spans; a
// collector that is busy (429, 502, 503, 504) is tried again, after its
// Retry-After or a growing wait, until the export's timeout.
func (c *client) UploadTraces(ctx context.Context, spans []*tracepb.ResourceSpans) error {
	var body []byte
	for _, rs := range spans {
		b, err := proto.Marshal(rs)
		if err != nil {
			return err
		}
		body = protowire.AppendTag(body, 1, protowire.BytesType)
		body = protowire.AppendBytes(body, b)
	}
	if c.gzip {
		var z bytes.Buffer
		w := gzip.NewWriter(&z)
		_, _ = w.Write(body)
		if err := w.Close(); err != nil {
			return err
		}
		body = z.Bytes()
	}
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	wait := time.Second
	for {
		retry, err := c.post(ctx, body)
		if err == nil || retry <= 0 {
			return err
		}
		retry = max(retry, wait)
		wait = min(2*wait, 8*time.Second)
		select {
		case <-ctx.Done():
			return err
		case <-time.After(retry):
		}
	}
}

// post posts body once; retry is how long to wait before trying again
// when the collector asks for it (0: do not).
func (c *client) post(ctx context.Context, body []byte) (retry time.Duration, err error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.endpoint, bytes.NewReader(body))
	if err != nil {
		return 0, err
	}
	for k, v := range c.headers {
		req.Header.Set(k, v)
	}
	req.Header.Set("Content-Type", "application/x-protobuf")
	if c.gzip {
		req.Header.Set("Content-Encoding", "gzip")
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return time.Second, err
	}
	defer resp.Body.Close()
	msg, _ := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
	if !utf8.Valid(msg) || strings.HasPrefix(resp.Header.Get("Content-Type"), "application/x-protobuf") {
		msg = nil // a Status message in protobuf: the status line says enough
	}
	switch resp.StatusCode {
	case http.StatusOK, http.StatusAccepted, http.StatusNoContent:
		return 0, nil
	case http.StatusTooManyRequests, http.StatusBadGateway, http.StatusServiceUnavailable, http.StatusGatewayTimeout:
		retry = time.Second
		if s, err := strconv.Atoi(resp.Header.Get("Retry-After")); err == nil && s > 0 {
			retry = time.Duration(s) * time.Second
		}
	}
	return retry, fmt.Errorf("the collector answered %s: %s", resp.Status, strings.TrimSpace(string(msg)))
}
