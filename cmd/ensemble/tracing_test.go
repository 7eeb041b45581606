package main

import (
	"bytes"
	"context"
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
	"time"

	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	"github.com/ensemble-run/ensemble/internal/fakemodel"
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
	events                    []string
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
		req, err := decodeExport(body)
		if err != nil {
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
						events: eventNames(s.Events),
					})
				}
			}
		}
		rc.mu.Unlock()
		w.Header().Set("Content-Type", "application/x-protobuf") // an empty ExportTraceServiceResponse
	}))
	t.Cleanup(rc.srv.Close)
	return rc
}

// export is an ExportTraceServiceRequest, decoded.
type export struct{ ResourceSpans []*tracepb.ResourceSpans }

// decodeExport reads an ExportTraceServiceRequest: field 1, repeated
// ResourceSpans (the collector's generated package would bring gRPC).
func decodeExport(b []byte) (*export, error) {
	req := &export{}
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return nil, protowire.ParseError(n)
		}
		b = b[n:]
		if num != 1 || typ != protowire.BytesType {
			n = protowire.ConsumeFieldValue(num, typ, b)
			if n < 0 {
				return nil, protowire.ParseError(n)
			}
			b = b[n:]
			continue
		}
		v, n := protowire.ConsumeBytes(b)
		if n < 0 {
			return nil, protowire.ParseError(n)
		}
		b = b[n:]
		rs := &tracepb.ResourceSpans{}
		if err := proto.Unmarshal(v, rs); err != nil {
			return nil, err
		}
		req.ResourceSpans = append(req.ResourceSpans, rs)
	}
	return req, nil
}

func eventNames(evs []*tracepb.Span_Event) []string {
	var names []string
	for _, e := range evs {
		names = append(names, e.Name)
	}
	return names
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

// traceKey is the model's key in the tracing tests: never in a span.
const traceKey = "sk-trace-secret-0123456789"

// tracedToolRun runs an LLM agent whose fake model (Chat Completions) asks
// for two tool calls, one of a tool it does not have, and then answers; a
// child ensemble runs after it. It returns the received run span.
func tracedToolRun(t *testing.T, capture bool) (*span, *otlpReceiver) {
	t.Helper()
	rc := newOTLPReceiver(t)
	model := fakemodel.New(t, func(r fakemodel.Request) fakemodel.Reply {
		if r.Last().Role == "tool" {
			return fakemodel.Reply{Text: "EMEA leads."}
		}
		return fakemodel.Reply{Calls: []fakemodel.Call{
			{ID: "call_1", Name: "lookup", Args: `{"region":"EMEA ` + traceKey + `"}`},
			{ID: "call_2", Name: "nope", Args: `{}`}}}
	}, fakemodel.WithUsage(100, 20))
	dir := t.TempDir()
	for name, body := range map[string]string{
		"ensemble.yaml": `name: traced
input: Which region leads?
models:
  fake:
    provider: openai
    model: fake-model
    base_url: ${FAKE_MODEL_URL}
    api_key_env: FAKE_KEY
    max_tokens: 500
tools:
  - name: lookup
    description: Sales of one region
    parameters: {type: object, properties: {region: {type: string}}, required: [region]}
    script: lookup.sh
agents:
  - name: analyst
    model_profile: fake
    prompt: Find the leading region.
    tools: [lookup]
  - name: round
    ensemble: child.yaml
    dependencies: [analyst]
`,
		"child.yaml": "name: child\nagents:\n  - name: inner\n    script: inner.sh\n",
		"inner.sh":   "#!/bin/sh\necho '{\"done\": true}'\n",
		"lookup.sh":  "#!/bin/sh\necho \"sales of $(cat)\"\n",
	} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	env := map[string]string{"FAKE_MODEL_URL": model.URL(), "FAKE_KEY": traceKey, "PATH": os.Getenv("PATH"),
		"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": rc.srv.URL + "/v1/traces"}
	if capture {
		env["OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"] = "true"
	}
	o := ensembleEnv(t, env, "run", filepath.Join(dir, "ensemble.yaml"), "--output", "json")
	if o.code != 0 {
		t.Fatalf("exit %d: %s", o.code, o.stderr)
	}
	roots := rc.roots(t)
	if len(roots) != 1 {
		t.Fatalf("%d roots", len(roots))
	}
	return roots[0], rc
}

// TestTraceOfModelRequestsAndToolCalls: model requests and tool calls are
// spans under their execution, with the GenAI conventions' attributes; a
// child ensemble's run nests under its agent's execution; no content is
// recorded unless asked for, and then without the key.
func TestTraceOfModelRequestsAndToolCalls(t *testing.T) {
	t.Parallel()
	run, rc := tracedToolRun(t, false)
	want := `run traced
  turn 1
    invoke_agent analyst
      chat fake-model
      chat fake-model
      execute_tool lookup
      execute_tool nope !
  turn 2
    invoke_agent round
      run child
        turn 1
          invoke_agent inner
`
	if got := run.tree(); got != want {
		t.Fatalf("span tree:\n%s\nwant:\n%s", got, want)
	}
	chats := run.find("chat ")
	for k, v := range map[string]any{"gen_ai.operation.name": "chat", "gen_ai.provider.name": "openai", "gen_ai.request.model": "fake-model",
		"gen_ai.usage.input_tokens": int64(100), "gen_ai.usage.output_tokens": int64(20), "gen_ai.request.max_tokens": int64(500)} {
		for _, c := range chats {
			if c.attrs[k] != v {
				t.Errorf("chat span: %s = %v, want %v", k, c.attrs[k], v)
			}
		}
	}
	if chats[0].kind != tracepb.Span_SPAN_KIND_CLIENT {
		t.Errorf("chat span kind %v", chats[0].kind)
	}
	reasons := []string{fmt.Sprint(chats[0].attrs["gen_ai.response.finish_reasons"]), fmt.Sprint(chats[1].attrs["gen_ai.response.finish_reasons"])}
	slices.Sort(reasons)
	if reasons[0] != "[stop]" || reasons[1] != "[tool_call]" {
		t.Errorf("finish reasons %v", reasons)
	}
	x := run.find("invoke_agent analyst")[0]
	if x.attrs["gen_ai.usage.input_tokens"] != int64(200) || x.attrs["ensemble.usage.requests"] != int64(2) {
		t.Errorf("execution usage %v", x.attrs)
	}
	tool := run.find("execute_tool lookup")[0]
	if tool.attrs["gen_ai.operation.name"] != "execute_tool" || tool.attrs["gen_ai.tool.name"] != "lookup" || tool.attrs["gen_ai.tool.call.id"] != "call_1" {
		t.Errorf("tool span %v", tool.attrs)
	}
	if bad := run.find("execute_tool nope")[0]; !strings.Contains(bad.status, `unknown tool "nope"`) {
		t.Errorf("failed tool status %q", bad.status)
	}
	if inner := run.find("invoke_agent inner")[0]; inner.attrs["ensemble.agent.path"] != "round/inner" || inner.attrs["ensemble.name"] != "child" {
		t.Errorf("child execution %v", inner.attrs)
	}
	for _, s := range rc.spans {
		for k, v := range s.attrs {
			if strings.Contains(k, "messages") || strings.Contains(k, "arguments") || strings.Contains(k, "result") || k == "ensemble.output" {
				t.Errorf("span %q records %s without the capture variable", s.name, k)
			}
			if strings.Contains(fmt.Sprint(v), traceKey) {
				t.Errorf("span %q: %s holds the key", s.name, k)
			}
		}
	}

	// With the capture variable: prompts, replies, tool arguments and
	// results, outputs; the key redacted from all of them.
	run, rc = tracedToolRun(t, true)
	chats = run.find("chat ")
	var all strings.Builder
	for _, s := range rc.spans {
		fmt.Fprintln(&all, s.attrs)
	}
	for _, want := range []string{"Find the leading region.", "Which region leads?", `"type":"tool_call"`, "EMEA leads.", "sales of", `"finish_reason":"stop"`} {
		if !strings.Contains(all.String(), want) {
			t.Errorf("captured content lacks %q:\n%s", want, all.String())
		}
	}
	if strings.Contains(all.String(), traceKey) {
		t.Errorf("a span holds the key:\n%s", all.String())
	}
	tool = run.find("execute_tool lookup")[0]
	if args, _ := tool.attrs["gen_ai.tool.call.arguments"].(string); !strings.Contains(args, "EMEA") {
		t.Errorf("tool arguments %q", args)
	}
	if out, _ := run.find("invoke_agent analyst")[0].attrs["ensemble.output"].(string); out != `"EMEA leads."` {
		t.Errorf("execution output %q", out)
	}
}

// TestTraceStandardVariables: OTEL_SERVICE_NAME, OTEL_RESOURCE_ATTRIBUTES
// and OTEL_EXPORTER_OTLP_HEADERS reach the collector (the SDK reads them
// from the process's environment, hence t.Setenv and no t.Parallel).
func TestTraceStandardVariables(t *testing.T) {
	t.Setenv("OTEL_SERVICE_NAME", "nightly-analysis")
	t.Setenv("OTEL_RESOURCE_ATTRIBUTES", "deployment.environment.name=ci")
	t.Setenv("OTEL_EXPORTER_OTLP_HEADERS", "x-collector-token=t0ken")
	rc := newOTLPReceiver(t)
	dir := "../../examples/hello-scripts/"
	o := ensembleEnv(t, map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": rc.srv.URL + "/", "PATH": os.Getenv("PATH")},
		"run", dir+"ensemble.yaml", "--responses", dir+"responses.yaml", "--output", "json")
	if o.code != 0 {
		t.Fatalf("exit %d: %s", o.code, o.stderr)
	}
	roots := rc.roots(t)
	if len(roots) != 1 {
		t.Fatalf("%d roots", len(roots))
	}
	res := roots[0].resource
	if res["service.name"] != "nightly-analysis" || res["deployment.environment.name"] != "ci" || res["service.version"] == nil {
		t.Errorf("resource %v", res)
	}
	if h := rc.headers[0].Get("X-Collector-Token"); h != "t0ken" {
		t.Errorf("header %q", h)
	}
}

// TestTraceConfigurationErrors: what cannot be honoured is a usage error
// before the run; OTEL_SDK_DISABLED and OTEL_TRACES_EXPORTER=none turn
// tracing off.
func TestTraceConfigurationErrors(t *testing.T) {
	t.Parallel()
	dir := "../../examples/hello-scripts/"
	args := []string{"run", dir + "ensemble.yaml", "--responses", dir + "responses.yaml", "--output", "json"}
	for _, tc := range []struct {
		env  map[string]string
		flag string
		want string
	}{
		{env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4317", "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"},
			want: "tracing: traces are exported over OTLP/HTTP only, not gRPC"},
		{env: map[string]string{"OTEL_EXPORTER_OTLP_TRACES_PROTOCOL": "grpc"}, flag: "http://127.0.0.1:1", want: "not gRPC"},
		{flag: "localhost:4318", want: `tracing: --otel: want an http:// or https:// URL such as http://localhost:4318, got "localhost:4318"`},
		{env: map[string]string{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "ftp://x"}, want: "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: want an http"},
		{env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:1", "OTEL_TRACES_EXPORTER": "zipkin"},
			want: "OTEL_TRACES_EXPORTER=zipkin: only otlp (or none) is supported"},
	} {
		a := args
		if tc.flag != "" {
			a = append(slices.Clone(args), "--otel", tc.flag)
		}
		o := ensembleEnv(t, tc.env, a...)
		if o.code != 2 || !strings.Contains(o.stderr, tc.want) || o.stdout != "" {
			t.Errorf("%v %s: exit %d, stderr %q; want exit 2 and %q", tc.env, tc.flag, o.code, o.stderr, tc.want)
		}
	}
	// test's scenarios take their tracing through the same export, and
	// refuse the same way before any scenario runs.
	if o := ensembleEnv(t, nil, "test", dir, "--otel", "localhost:4318"); o.code != 2 || !strings.Contains(o.stderr, `tracing: --otel: want an http:// or https:// URL`) ||
		strings.Contains(o.stdout, "scenario") {
		t.Errorf("test --otel localhost:4318: exit %d, stdout %q, stderr %q", o.code, o.stdout, o.stderr)
	}
	// Off: nothing is sent, though an endpoint is set.
	rc := newOTLPReceiver(t)
	for _, env := range []map[string]string{{"OTEL_SDK_DISABLED": "true"}, {"OTEL_TRACES_EXPORTER": "none"}} {
		env["OTEL_EXPORTER_OTLP_ENDPOINT"] = rc.srv.URL
		if o := ensembleEnv(t, env, args...); o.code != 0 {
			t.Fatalf("%v: exit %d: %s", env, o.code, o.stderr)
		}
	}
	if len(rc.spans) != 0 {
		t.Errorf("%d spans sent while tracing was off", len(rc.spans))
	}
}

// TestTraceOfEnsembleTest: ensemble test --otel traces each scenario's run.
func TestTraceOfEnsembleTest(t *testing.T) {
	t.Parallel()
	rc := newOTLPReceiver(t)
	o := ensembleCmd(t, "", "test", "--otel", rc.srv.URL, "../../examples/iterative-analysis")
	if o.code != 0 {
		t.Fatalf("exit %d: %s%s", o.code, o.stdout, o.stderr)
	}
	roots := rc.roots(t)
	if len(roots) == 0 {
		t.Fatal("no trace")
	}
	for _, r := range roots {
		if r.name != "run iterative-analysis" || len(r.find("turn ")) == 0 {
			t.Errorf("root %q:\n%s", r.name, r.tree())
		}
	}
}

// TestTraceFlushedOnCtrlC: a run cancelled mid-turn (SIGINT) still exports
// its spans before the command returns, the run's with an error status.
func TestTraceFlushedOnCtrlC(t *testing.T) {
	t.Parallel()
	rc := newOTLPReceiver(t)
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "ensemble.yaml"), "name: blocking\nagents:\n  - name: wait\n    script: wait.sh\n")
	writeFile(t, filepath.Join(dir, "wait.sh"), "#!/bin/sh\ntouch \"$(dirname \"$0\")/started\"\nsleep 60\n")
	os.Chmod(filepath.Join(dir, "wait.sh"), 0o755)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		for {
			if _, err := os.Stat(filepath.Join(dir, "started")); err == nil {
				cancel()
				return
			}
			select {
			case <-ctx.Done():
				return
			case <-time.After(10 * time.Millisecond):
			}
		}
	}()
	var out, errb bytes.Buffer
	code := run(ctx, []string{"run", filepath.Join(dir, "ensemble.yaml"), "--output", "json", "--otel", rc.srv.URL},
		&stdio{in: strings.NewReader(""), out: &out, err: &errb, getenv: func(k string) (string, bool) {
			if k == "PATH" {
				return os.LookupEnv(k)
			}
			return "", false
		}})
	if code != 130 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	roots := rc.roots(t)
	if len(roots) != 1 {
		t.Fatalf("%d roots", len(roots))
	}
	want := "run blocking !\n  turn 1 !\n    invoke_agent wait !\n"
	if got := roots[0].tree(); got != want || roots[0].attrs["ensemble.completion_reason"] != "cancelled" {
		t.Fatalf("tree:\n%s\nwant:\n%s%v", got, want, roots[0].attrs)
	}
}

// TestTraceCollectorRefuses: a collector that refuses the spans costs a
// warning on stderr, not the run's result or its exit code.
func TestTraceCollectorRefuses(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "no room", http.StatusBadRequest)
	}))
	defer srv.Close()
	dir := "../../examples/hello-scripts/"
	o := ensembleEnv(t, map[string]string{"PATH": os.Getenv("PATH")},
		"run", dir+"ensemble.yaml", "--responses", dir+"responses.yaml", "--output", "json", "--otel", srv.URL)
	if o.code != 0 || !strings.Contains(o.stdout, `"completion_reason": "completed"`) {
		t.Fatalf("exit %d: %s", o.code, o.stderr)
	}
	want := "ensemble: warning: traces were not all exported to " + srv.URL + "/v1/traces: "
	if strings.Count(o.stderr, "\n") != 1 || !strings.HasPrefix(o.stderr, want) || !strings.Contains(o.stderr, "400") {
		t.Fatalf("stderr %q, want one line starting %q", o.stderr, want)
	}
}

// TestTraceOfARunThatWaits: an ask agent that waits for an answer is not a
// failure, nor is its run (exit 5); a retried execution records its failed
// attempts as events.
func TestTraceOfARunThatWaits(t *testing.T) {
	t.Parallel()
	rc := newOTLPReceiver(t)
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "ensemble.yaml"), `name: waits
agents:
  - name: flaky
    script: flaky.sh
    retry: {attempts: 2, backoff: 1ms}
  - name: approve
    ask: Ship it?
    dependencies: [flaky]
`)
	writeFile(t, filepath.Join(dir, "flaky.sh"), "#!/bin/sh\nd=$(dirname \"$0\")\nif [ -e \"$d/tried\" ]; then echo '{\"ok\": true}'; else touch \"$d/tried\"; exit 1; fi\n")
	os.Chmod(filepath.Join(dir, "flaky.sh"), 0o755)
	o := ensembleEnv(t, map[string]string{"PATH": os.Getenv("PATH")},
		"run", filepath.Join(dir, "ensemble.yaml"), "--output", "json", "--state", filepath.Join(dir, "run.db"), "--no-input", "--otel", rc.srv.URL)
	if o.code != 5 {
		t.Fatalf("exit %d: %s", o.code, o.stderr)
	}
	roots := rc.roots(t)
	if len(roots) != 1 {
		t.Fatalf("%d roots", len(roots))
	}
	want := "run waits\n  turn 1\n    invoke_agent flaky\n  turn 2\n    invoke_agent approve\n"
	if got := roots[0].tree(); got != want || roots[0].attrs["ensemble.completion_reason"] != "awaiting_input" {
		t.Fatalf("tree:\n%s\nwant:\n%s%v", got, want, roots[0].attrs)
	}
	if a := roots[0].find("invoke_agent approve")[0]; a.attrs["ensemble.awaiting_input"] != true {
		t.Errorf("approve %v", a.attrs)
	}
	if f := roots[0].find("invoke_agent flaky")[0]; len(f.events) != 1 || f.events[0] != "retry" {
		t.Errorf("flaky's events %v", f.events)
	}
}
