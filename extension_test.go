package ensemble_test

import (
	"context"
	"errors"
	"fmt"
	"go/parser"
	"go/token"
	"log"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/ensemble-run/ensemble/agent"
	"github.com/ensemble-run/ensemble/agentpath"
	"github.com/ensemble-run/ensemble/ensemble"
	"github.com/ensemble-run/ensemble/kinds"
	"github.com/ensemble-run/ensemble/scriptexec"
	"github.com/ensemble-run/ensemble/session"
)

// shoutKind is a kind of agent written as a program outside this module
// would write one, with the public packages only: `shout: SCRIPT` runs
// SCRIPT with the agent's input on stdin, as the script kind runs its
// scripts (scriptexec), and its output is what the script wrote.
type shoutKind struct{}

func (shoutKind) String() string   { return "shout" }
func (shoutKind) Key() string      { return "shout" }
func (shoutKind) Fields() []string { return nil }
func (shoutKind) Decode(f *ensemble.Fields, a *ensemble.Agent) {
	a.Spec = f.String("shout")
	f.Require("shout", a.Spec == "")
}

func (shoutKind) Runner(h *agent.Host) agent.Runner {
	return agent.RunnerFunc(func(ctx context.Context, req *agent.Request) *agent.Result {
		// With tracing on, a span of its own under the execution's, as the
		// built-in kinds make theirs (agent.Tracer).
		if tr := req.Services.Tracer; tr != nil {
			var span trace.Span
			ctx, span = tr.Start(ctx, "shout "+req.Name())
			defer span.End()
		}
		in := fmt.Sprint(scriptexec.Input(req))
		out, err := scriptexec.ExecScript(ctx, req, h.Environ, nil,
			scriptexec.Spec{Path: req.Agent.Spec.(string), Stdin: []byte(in)})
		data := scriptexec.BaseInputData(req)
		var exit *scriptexec.ExitError
		if errors.As(err, &exit) {
			return &agent.Result{Err: fmt.Errorf("the script exited with %d", exit.Code), InputData: data}
		}
		if err != nil {
			return &agent.Result{Err: err, InputData: data}
		}
		return &agent.Result{Output: strings.TrimSpace(string(out.Stdout)), InputData: data}
	})
}

// extensionFiles writes an ensemble that uses the shout kind beside a
// built-in script agent, and their scripts, into a new folder.
func extensionFiles(dir string) (string, error) {
	files := map[string]string{
		"ext.yaml": "name: ext\ninput: hello\nagents:\n" +
			"  - {name: loud, shout: shout.sh}\n" +
			"  - {name: after, script: after.sh, dependencies: [loud]}\n",
		"shout.sh": "#!/bin/sh\ntr a-z A-Z\necho \" from $ENSEMBLE_AGENT, turn $ENSEMBLE_TURN\"\n",
		"after.sh": "#!/bin/sh\necho done\n",
	}
	for name, body := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o755); err != nil {
			return "", err
		}
	}
	return filepath.Join(dir, "ext.yaml"), nil
}

// A kind of agent from outside the module: registered beside the built-in
// kinds, it is loaded and run through package session like any other,
// and its records are read by agent path.
func Example_aNewKind() {
	dir, err := os.MkdirTemp("", "ensemble-kind")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	path, err := extensionFiles(dir)
	if err != nil {
		log.Fatal(err)
	}
	reg := kinds.Builtin()
	reg.Register(shoutKind{})
	noEnv := func(string) (string, bool) { return "", false }
	e, err := session.Load(path, nil, session.LoadOptions{Kinds: reg, LookupEnv: noEnv})
	if err != nil {
		log.Fatal(err)
	}
	ctx := context.Background()
	s, err := session.Open(ctx, e, session.Options{Kinds: reg, LookupEnv: noEnv})
	if err != nil {
		log.Fatal(err)
	}
	defer s.Close()
	r, err := s.Start("", session.RunOptions{})
	if err != nil {
		log.Fatal(err)
	}
	res, err := r.Run(ctx)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(res.CompletionReason, agentpath.AgentAt(e, "loud").Kind)
	for _, rec := range agentpath.PathRecords(res.ConversationHistory, "loud") {
		fmt.Println(rec.AgentName, "said", rec.OutputData)
	}
	fmt.Println("after said", res.FinalState["after"])
	// Output:
	// completed shout
	// loud said HELLO from loud, turn 1
	// after said done
}

// TestExtensionTraces: the outside kind's span is among the run's, under
// the span of its execution.
func TestExtensionTraces(t *testing.T) {
	t.Parallel()
	path, err := extensionFiles(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	reg := kinds.Builtin()
	reg.Register(shoutKind{})
	noEnv := func(string) (string, bool) { return "", false }
	e, err := session.Load(path, nil, session.LoadOptions{Kinds: reg, LookupEnv: noEnv})
	if err != nil {
		t.Fatal(err)
	}
	spans := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(spans))
	defer func() { _ = tp.Shutdown(context.Background()) }()
	ctx := context.Background()
	s, err := session.Open(ctx, e, session.Options{Kinds: reg, LookupEnv: noEnv,
		Tracing: session.Tracing{Tracer: tp.Tracer("extension")}})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	r, err := s.Start("", session.RunOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if res, err := r.Run(ctx); err != nil || res.CompletionReason != "completed" {
		t.Fatalf("run: %v, %+v", err, res)
	}
	byID := map[trace.SpanID]sdktrace.ReadOnlySpan{}
	for _, sp := range spans.Ended() {
		byID[sp.SpanContext().SpanID()] = sp
	}
	for _, sp := range spans.Ended() {
		if sp.Name() == "shout loud" {
			if parent, ok := byID[sp.Parent().SpanID()]; !ok || !strings.Contains(parent.Name(), "loud") {
				t.Fatalf("the shout span's parent is %v, not the execution of loud", parent)
			}
			return
		}
	}
	t.Fatalf("no span \"shout loud\" among %d", len(spans.Ended()))
}

// The example above stands for a program outside this module: it may use
// only the public packages, which this test holds it to, so that a
// package it needs cannot move under internal/ unnoticed.
func TestExtensionUsesOnlyPublicPackages(t *testing.T) {
	t.Parallel()
	f, err := parser.ParseFile(token.NewFileSet(), "extension_test.go", nil, parser.ImportsOnly)
	if err != nil {
		t.Fatal(err)
	}
	const module = "github.com/ensemble-run/ensemble"
	var ours int
	for _, imp := range f.Imports {
		p, err := strconv.Unquote(imp.Path.Value)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(p, module+"/") {
			continue
		}
		ours++
		if strings.Contains(p+"/", "/internal/") {
			t.Errorf("the extension imports %s, which a program outside the module cannot", p)
		}
	}
	if ours == 0 {
		t.Error("found none of the module's packages among the extension's imports")
	}
}
