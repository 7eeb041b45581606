package telemetry

import (
	"compress/gzip"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	resourcepb "go.opentelemetry.io/proto/otlp/resource/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
)

// The client posts an ExportTraceServiceRequest as a collector reads it
// (field 1, each ResourceSpans), gzipped with the headers the variables
// give; a busy collector is tried again; a refusal is an error with what
// the collector said.
func TestClient(t *testing.T) {
	t.Setenv("OTEL_EXPORTER_OTLP_HEADERS", "x-token=a%20b, other=c")
	t.Setenv("OTEL_EXPORTER_OTLP_TRACES_COMPRESSION", "gzip")
	var (
		mu    sync.Mutex
		calls int
		got   []*tracepb.ResourceSpans
	)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		calls++
		if calls == 1 {
			w.Header().Set("Retry-After", "1")
			http.Error(w, "busy", http.StatusServiceUnavailable)
			return
		}
		if r.Header.Get("X-Token") != "a b" || r.Header.Get("Other") != "c" || r.Header.Get("Content-Encoding") != "gzip" ||
			r.Header.Get("Content-Type") != "application/x-protobuf" {
			http.Error(w, "headers "+r.Header.Get("X-Token"), http.StatusBadRequest)
			return
		}
		z, err := gzip.NewReader(r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		b, _ := io.ReadAll(z)
		for len(b) > 0 {
			num, typ, n := protowire.ConsumeTag(b)
			b = b[n:]
			v, m := protowire.ConsumeBytes(b)
			if n < 0 || m < 0 || num != 1 || typ != protowire.BytesType {
				http.Error(w, "not an export request", http.StatusBadRequest)
				return
			}
			b = b[m:]
			rs := &tracepb.ResourceSpans{}
			if err := proto.Unmarshal(v, rs); err != nil {
				http.Error(w, err.Error(), http.StatusBadRequest)
				return
			}
			got = append(got, rs)
		}
	}))
	defer srv.Close()
	c, err := newClient(srv.URL + "/v1/traces")
	if err != nil {
		t.Fatal(err)
	}
	spans := []*tracepb.ResourceSpans{
		{Resource: &resourcepb.Resource{}, ScopeSpans: []*tracepb.ScopeSpans{{Spans: []*tracepb.Span{{Name: "one"}}}}},
		{ScopeSpans: []*tracepb.ScopeSpans{{Spans: []*tracepb.Span{{Name: "two"}}}}},
	}
	if err := c.UploadTraces(context.Background(), spans); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	if calls != 2 || len(got) != 2 || got[0].ScopeSpans[0].Spans[0].Name != "one" || got[1].ScopeSpans[0].Spans[0].Name != "two" {
		t.Fatalf("%d calls, got %v", calls, got)
	}
	mu.Unlock()

	refuse := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "no such tenant", http.StatusUnauthorized)
	}))
	defer refuse.Close()
	c, _ = newClient(refuse.URL)
	err = c.UploadTraces(context.Background(), spans)
	if err == nil || !strings.Contains(err.Error(), "401 Unauthorized: no such tenant") {
		t.Errorf("refused: %v", err)
	}
}

// Settings the client cannot honour are errors of Setup.
func TestClientSettings(t *testing.T) {
	for name, v := range map[string]string{
		"OTEL_EXPORTER_OTLP_TIMEOUT":     "ten",
		"OTEL_EXPORTER_OTLP_COMPRESSION": "zstd",
		"OTEL_EXPORTER_OTLP_CERTIFICATE": "/nonexistent/ca.pem",
	} {
		t.Run(name, func(t *testing.T) {
			t.Setenv(name, v)
			if _, err := newClient("http://127.0.0.1:1"); err == nil || !strings.Contains(err.Error(), "OTEL_EXPORTER_OTLP_") {
				t.Errorf("%s=%s: %v", name, v, err)
			}
		})
	}
}
