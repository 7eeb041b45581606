package session_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/ensemble-run/ensemble/session"
)

// runExported runs testdata/release.yaml with injected responses in a
// session that exports its spans as x says, and closes it.
func runExported(t *testing.T, x *session.Export, env map[string]string) error {
	t.Helper()
	lookup := func(k string) (string, bool) { v, ok := env[k]; return v, ok }
	e, err := session.Load("testdata/release.yaml", nil, session.LoadOptions{LookupEnv: lookup})
	if err != nil {
		t.Fatal(err)
	}
	resp, err := session.ParseResponses("responses", []byte("writer: [a]\napprover: [{approved: true}]\npublisher: [b]\n"))
	if err != nil {
		t.Fatal(err)
	}
	s, err := session.Open(context.Background(), e, session.Options{Models: session.Models{Responses: resp}, LookupEnv: lookup,
		Tracing: session.Tracing{Export: x}})
	if err != nil {
		return err
	}
	r, err := s.Start("", session.RunOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	s.Close()
	s.Close() // once is enough: no second export, no second warning
	return nil
}

// The tests of Export do not run in parallel: the SDK reports a failed
// export to the process's one error handler, which counts it for every
// exporter set up at the time.

func TestExportSendsSpansOnClose(t *testing.T) {
	var posts atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/v1/traces" {
			posts.Add(1)
		}
		w.Header().Set("Content-Type", "application/x-protobuf")
	}))
	defer srv.Close()
	for _, c := range []struct {
		name string
		x    *session.Export
		env  map[string]string
	}{
		{"endpoint", &session.Export{Endpoint: srv.URL}, nil},
		{"environment", &session.Export{}, map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": srv.URL}},
	} {
		before := posts.Load()
		var warned atomic.Int64
		c.x.Warn = func(string, error) { warned.Add(1) }
		if err := runExported(t, c.x, c.env); err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if posts.Load() == before {
			t.Errorf("%s: the collector received no spans by the time the session closed", c.name)
		}
		if warned.Load() != 0 {
			t.Errorf("%s: warned %d times for a collector that took the spans", c.name, warned.Load())
		}
	}
}

func TestExportWarnsOnceWhenTheCollectorRefuses(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "no", http.StatusBadRequest)
	}))
	defer srv.Close()
	var warned []string
	x := &session.Export{Endpoint: srv.URL, Warn: func(endpoint string, err error) { warned = append(warned, endpoint) }}
	if err := runExported(t, x, nil); err != nil {
		t.Fatal(err)
	}
	if len(warned) != 1 || warned[0] != srv.URL+"/v1/traces" {
		t.Errorf("warnings for %q, want one for %s/v1/traces", warned, srv.URL)
	}
}

func TestExportConfigurationError(t *testing.T) {
	err := runExported(t, &session.Export{}, map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:1",
		"OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"})
	if err == nil || !strings.HasPrefix(err.Error(), "tracing: ") || !strings.Contains(err.Error(), "gRPC") {
		t.Errorf("Open: %v, want a tracing: error naming gRPC", err)
	}
	// No Export: the environment alone sets nothing up.
	if err := runExported(t, nil, map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:1",
		"OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"}); err != nil {
		t.Errorf("Open without Export: %v", err)
	}
}
