package telemetry

import (
	"context"
	"strings"
	"testing"
)

func TestEndpointOf(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ flag, traces, base, want, err string }{
		{},
		{base: "http://localhost:4318", want: "http://localhost:4318/v1/traces"},
		{base: "http://localhost:4318/", want: "http://localhost:4318/v1/traces"},
		{base: "https://otel.example/prefix", want: "https://otel.example/prefix/v1/traces"},
		{traces: "http://c:4318/custom", base: "http://other", want: "http://c:4318/custom"},
		{flag: "http://flag:4318", traces: "http://c:4318/custom", want: "http://flag:4318/v1/traces"},
		{flag: "http://flag:4318/v1/traces", want: "http://flag:4318/v1/traces"},
		{flag: "localhost:4318", err: "--otel: want an http:// or https:// URL"},
		{base: "grpc://x", err: EnvEndpoint + ": want an http"},
	} {
		got, err := endpointOf(tc.flag, tc.traces, tc.base)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%+v: error %v, want %q", tc, err, tc.err)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("%+v: %q, %v; want %q", tc, got, err, tc.want)
		}
	}
}

// Off without an endpoint: no SDK, no error; and the content flag.
func TestSetup(t *testing.T) {
	t.Parallel()
	tr, err := Setup(context.Background(), Config{LookupEnv: func(string) (string, bool) { return "", false }})
	if tr != nil || err != nil {
		t.Fatalf("without an endpoint: %v, %v", tr, err)
	}
	env := map[string]string{EnvCaptureContent: "TRUE"}
	tr, err = Setup(context.Background(), Config{Endpoint: "http://127.0.0.1:1", LookupEnv: func(k string) (string, bool) { v, ok := env[k]; return v, ok }})
	if err != nil || tr == nil || !tr.Content || tr.Endpoint != "http://127.0.0.1:1/v1/traces" {
		t.Fatalf("%+v, %v", tr, err)
	}
	if err := tr.Shutdown(); err != nil { // nothing to export: no wait
		t.Fatal(err)
	}
}
