package main

import (
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"
)

// otlpReceiver is an in-process OTLP/HTTP collector: it decodes the
// protobuf export requests the command sends and keeps their spans.
type otlpReceiver struct {
	srv     *httptest.Server
	mu      sync.Mutex
	spans   []*span
	headers []http.Header
}

// span is a received span, flattened.
type span struct {
	name, traceID, id, parent string
	kind                      tracepb.Span_SpanKind
	attrs                     map[string]any
	resource                  map[string]any
	errored                   bool
	status                    string
	children                  []*span
}

func newOTLPReceiver(t *testing.T) *otlpReceiver {
	t.Helper()
	rc := &otlpReceiver{}
	rc.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/v1/traces" || r.Header.Get("Content-Type") != "application/x-protobuf" {
			http.Error(w, "want a protobuf POST to /v1/traces, got "+r.URL.Path+" "+r.Header.Get("Content-Type"), http.StatusBadRequest)
			return
		}
		body, err := io.ReadAll(r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		var req coltracepb.ExportTraceServiceRequest
		if err := proto.Unmarshal(body, &req); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		rc.mu.Lock()
		rc.headers = append(rc.headers, r.Header.Clone())
		for _, rs := range req.ResourceSpans {
			res := attrMap(rs.GetResource().GetAttributes())
			for _, ss := range rs.ScopeSpans {
				for _, s := range ss.Spans {
					rc.spans = append(rc.spans, &span{
						name: s.Name, traceID: hex.EncodeToString(s.TraceId), id: hex.EncodeToString(s.SpanId),
						parent: hex.EncodeToString(s.ParentSpanId), kind: s.Kind, attrs: attrMap(s.Attributes), resource: res,
						errored: s.GetStatus().GetCode() == tracepb.Status_STATUS_CODE_ERROR, status: s.GetStatus().GetMessage(),
					})
				}
			}
		}
		rc.mu.Unlock()
		w.Header().Set("Content-Type", "application/x-protobuf")
		out, _ := proto.Marshal(&coltracepb.ExportTraceServiceResponse{})
		w.Write(out)
	}))
	t.Cleanup(rc.srv.Close)
	return rc
}

func attrMap(kvs []*commonpb.KeyValue) map[string]any {
	m := map[string]any{}
	for _, kv := range kvs {
		m[kv.Key] = anyValue(kv.Value)
	}
	return m
}

func anyValue(v *commonpb.AnyValue) any {
	switch x := v.GetValue().(type) {
	case *commonpb.AnyValue_StringValue:
		return x.StringValue
	case *commonpb.AnyValue_IntValue:
		return x.IntValue
	case *commonpb.AnyValue_DoubleValue:
		return x.DoubleValue
	case *commonpb.AnyValue_BoolValue:
		return x.BoolValue
	case *commonpb.AnyValue_ArrayValue:
		var out []any
		for _, e := range x.ArrayValue.Values {
			out = append(out, anyValue(e))
		}
		return out
	}
	return nil
}

// roots links the received spans into trees and returns the roots, every
// span's children in the order they were received (spans end, and so are
// exported, children first; they are sorted by name then turn for the
// checks).
func (rc *otlpReceiver) roots(t *testing.T) []*span {
	t.Helper()
	rc.mu.Lock()
	defer rc.mu.Unlock()
	byID := map[string]*span{}
	for _, s := range rc.spans {
		s.children = nil
		byID[s.id] = s
	}
	var roots []*span
	for _, s := range rc.spans {
		if s.parent == "" || s.parent == strings.Repeat("0", 16) {
			roots = append(roots, s)
			continue
		}
		p := byID[s.parent]
		if p == nil {
			t.Fatalf("span %q has a parent %s that was not exported", s.name, s.parent)
		}
		if p.traceID != s.traceID {
			t.Fatalf("span %q is in another trace than its parent %q", s.name, p.name)
		}
		p.children = append(p.children, s)
	}
	for _, s := range rc.spans {
		slices.SortStableFunc(s.children, func(a, b *span) int {
			if c := cmpInt(a.attrs["ensemble.turn"], b.attrs["ensemble.turn"]); c != 0 {
				return c
			}
			return strings.Compare(a.name, b.name)
		})
	}
	return roots
}

func cmpInt(a, b any) int {
	x, _ := a.(int64)
	y, _ := b.(int64)
	return int(x - y)
}

// tree draws s and its descendants, one span a line, indented.
func (s *span) tree() string {
	var b strings.Builder
	var walk func(*span, int)
	walk = func(s *span, depth int) {
		mark := ""
		if s.errored {
			mark = " !"
		}
		fmt.Fprintf(&b, "%s%s%s\n", strings.Repeat("  ", depth), s.name, mark)
		for _, c := range s.children {
			walk(c, depth+1)
		}
	}
	walk(s, 0)
	return b.String()
}

// find returns the spans of the tree under s whose name starts with prefix.
func (s *span) find(prefix string) []*span {
	var out []*span
	if strings.HasPrefix(s.name, prefix) {
		out = append(out, s)
	}
	for _, c := range s.children {
		out = append(out, c.find(prefix)...)
	}
	return out
}

// TestTraceOfIterativeAnalysis: a run of the example exports one trace, a
// run span with a span per turn and under each the span of the agent that
// ran in it, with the run's ids as attributes.
func TestTraceOfIterativeAnalysis(t *testing.T) {
	t.Parallel()
	rc := newOTLPReceiver(t)
	dir := "../../examples/iterative-analysis/"
	o := ensembleCmd(t, "", "run", dir+"ensemble.yaml", "--responses", dir+"responses.yaml", "--output", "json", "--otel", rc.srv.URL)
	if o.code != 0 {
		t.Fatalf("exit %d: %s", o.code, o.stderr)
	}
	roots := rc.roots(t)
	if len(roots) != 1 {
		t.Fatalf("%d root spans, want 1 (the run)", len(roots))
	}
	run := roots[0]
	want := `run iterative-analysis
  turn 1
    invoke_agent data_extractor
  turn 2
    invoke_agent llm_analyzer
  turn 3
    invoke_agent user_clarification
  turn 4
    invoke_agent llm_analyzer
  turn 5
    invoke_agent final_synthesis
`
	if got := run.tree(); got != want {
		t.Fatalf("span tree:\n%s\nwant:\n%s", got, want)
	}
	if run.attrs["ensemble.name"] != "iterative-analysis" || run.attrs["ensemble.completion_reason"] != "completed" ||
		run.attrs["ensemble.turn_count"] != int64(5) {
		t.Errorf("run attributes %v", run.attrs)
	}
	if run.resource["service.name"] != "ensemble" {
		t.Errorf("resource %v", run.resource)
	}
	x := run.find("invoke_agent llm_analyzer")[1]
	for k, v := range map[string]any{"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "llm_analyzer",
		"ensemble.agent": "llm_analyzer", "ensemble.turn": int64(4), "ensemble.execution": int64(2), "ensemble.agent.kind": "llm",
		"ensemble.name": "iterative-analysis"} {
		if x.attrs[k] != v {
			t.Errorf("execution span: %s = %v, want %v (%v)", k, x.attrs[k], v, x.attrs)
		}
	}
	// No content without OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT.
	for _, s := range rc.spans {
		for k := range s.attrs {
			if k == "ensemble.input" || k == "ensemble.output" || strings.HasPrefix(k, "gen_ai.input") || strings.HasPrefix(k, "gen_ai.output") {
				t.Errorf("span %q records %s without the capture variable", s.name, k)
			}
		}
	}
}

// TestTraceOfAFailedRun: a failed execution, and its run, have an error
// status; --state records the run's id.
func TestTraceOfAFailedRun(t *testing.T) {
	t.Parallel()
	rc := newOTLPReceiver(t)
	dir := t.TempDir()
	ens := `name: failing
agents:
  - name: breaks
    script: fail.sh
`
	writeFile(t, filepath.Join(dir, "ensemble.yaml"), ens)
	writeFile(t, filepath.Join(dir, "fail.sh"), "#!/bin/sh\necho boom >&2\nexit 3\n")
	os.Chmod(filepath.Join(dir, "fail.sh"), 0o755)
	o := ensembleEnv(t, map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": rc.srv.URL, "PATH": os.Getenv("PATH")},
		"run", filepath.Join(dir, "ensemble.yaml"), "--output", "json", "--state", filepath.Join(dir, "run.db"), "--run-id", "r-1")
	if o.code != 1 {
		t.Fatalf("exit %d: %s", o.code, o.stderr)
	}
	roots := rc.roots(t)
	if len(roots) != 1 {
		t.Fatalf("%d roots", len(roots))
	}
	run := roots[0]
	if got := run.tree(); got != "run failing !\n  turn 1\n    invoke_agent breaks !\n" {
		t.Fatalf("tree:\n%s", got)
	}
	if run.attrs["ensemble.run.id"] != "r-1" || run.find("invoke_agent")[0].attrs["ensemble.run.id"] != "r-1" {
		t.Errorf("run id: %v", run.attrs)
	}
	if x := run.find("invoke_agent")[0]; !strings.Contains(x.status, "exit") {
		t.Errorf("status %q", x.status)
	}
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}
