package mcpserve

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/ensemble-run/ensemble/serve"
)

// initLines open a session: the client takes elicitation.
const initLines = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{"elicitation":{}},"clientInfo":{"name":"t","version":"1"}}}
{"jsonrpc":"2.0","method":"notifications/initialized"}
`

// serveLines serves server over the stdio Transport on the lines in,
// whose end closes stdin at once: it returns every line written, and
// what Serve returned; it fails when Serve does not return.
func serveLines(t *testing.T, ctx context.Context, server *mcp.Server, in string) ([]string, error) {
	t.Helper()
	outR, outW := io.Pipe()
	done := make(chan error, 1)
	go func() {
		err := Serve(ctx, server, Transport(strings.NewReader(in), outW))
		outW.Close()
		done <- err
	}()
	read := make(chan []string, 1)
	go func() {
		var lines []string
		sc := bufio.NewScanner(outR)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			lines = append(lines, sc.Text())
		}
		read <- lines
	}()
	select {
	case err := <-done:
		return <-read, err
	case <-time.After(2 * time.Minute):
		outR.Close()
		t.Fatalf("Serve did not return; it wrote %q", <-read)
		return nil, nil
	}
}

// replyTo is the reply of id among lines (not an error's).
func replyTo(t *testing.T, lines []string, id int) map[string]any {
	t.Helper()
	for _, l := range lines {
		var m map[string]any
		if json.Unmarshal([]byte(l), &m) == nil && m["id"] == float64(id) && m["result"] != nil {
			return m
		}
	}
	t.Fatalf("no reply to request %d: %q", id, lines)
	return nil
}

// TestEndOfStdinAnswersTheCallsRead: stdin ends right after a call whose
// run takes a while; the call is answered with the run's result before
// Serve returns nil (the error answered to a bad line with the call's id
// is not taken for its reply).
func TestEndOfStdinAnswersTheCallsRead(t *testing.T) {
	t.Parallel()
	server := serverOf(t, map[string]string{
		"nap.yaml": "name: nap\nagents:\n  - name: n\n    script: nap.sh\n",
		"nap.sh":   "#!/bin/sh\ncat >/dev/null\nsleep 0.5\necho '\"rested\"'\n",
	})
	lines, err := serveLines(t, t.Context(), server, initLines+
		`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"nap","arguments":{"input":"x"}}}`+"\n"+
		`{"jsonrpc":"1.0","id":2,"method":"ping"}`+"\n"+ // refused by the filter, with the call's id
		`{"jsonrpc":"2.0","id":3,"method":"ping"}`+"\n")
	if err != nil {
		t.Errorf("Serve: %v", err)
	}
	reply := replyTo(t, lines, 2)
	b, _ := json.Marshal(reply["result"])
	if !strings.Contains(string(b), `completion_reason\": \"completed`) || !strings.Contains(string(b), "rested") {
		t.Errorf("the call's reply: %s", b)
	}
	replyTo(t, lines, 3)
}

// TestEndOfStdinAnswersElicitation: a call whose run asks a question,
// with stdin closed: its elicitation request can get no reply, so it is
// refused at once, and the call is answered with the run waiting.
func TestEndOfStdinAnswersElicitation(t *testing.T) {
	t.Parallel()
	srv := newServeRuns(t)
	t.Cleanup(func() { srv.Runs().Close(0) })
	lines, err := serveLines(t, t.Context(), NewRunsServer(srv.Runs(), true), initLines+
		`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"approve"}}`+"\n")
	if err != nil {
		t.Errorf("Serve: %v", err)
	}
	if !strings.Contains(strings.Join(lines, "\n"), `"method":"elicitation/create"`) {
		t.Errorf("no elicitation request: %q", lines)
	}
	b, _ := json.Marshal(replyTo(t, lines, 2)["result"])
	if !strings.Contains(string(b), `\"status\":\"suspended\"`) {
		t.Errorf("the call's reply: %s", b)
	}
}

// TestStopInterruptsARunOfRuns: the server stops (its context is done)
// while a call's run goes on: Serve returns at once, and the run is left
// running for Runs.Close, which interrupts it (it goes on when the server
// starts again): it is not cancelled, as a call the client cancels is.
func TestStopInterruptsARunOfRuns(t *testing.T) {
	t.Parallel()
	srv := newServeRuns(t)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	inR, inW := io.Pipe()
	defer inW.Close()
	outR, outW := io.Pipe()
	done := make(chan error, 1)
	go func() { done <- Serve(ctx, NewRunsServer(srv.Runs(), true), Transport(inR, outW)) }()
	go func() { _, _ = io.Copy(io.Discard, outR) }()
	if _, err := io.WriteString(inW, initLines+`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"slow"}}`+"\n"); err != nil {
		t.Fatal(err)
	}
	var id string
	for deadline := time.Now().Add(time.Minute); id == ""; time.Sleep(10 * time.Millisecond) {
		list, _, err := srv.Runs().List("", "", "", 10)
		if err != nil {
			t.Fatal(err)
		}
		if len(list) > 0 && list[0].Status == serve.StatusRunning {
			id = list[0].ID
		}
		if time.Now().After(deadline) {
			t.Fatal("the run never started")
		}
	}
	cancel()
	select {
	case err := <-done:
		if err != context.Canceled {
			t.Errorf("Serve: %v", err)
		}
	case <-time.After(2 * time.Minute): // the run sleeps 600 s
		t.Fatal("Serve did not return when stopped")
	}
	_, status, err := srv.Runs().RunResult(id)
	if err != nil || status != serve.StatusRunning {
		t.Errorf("run %s: %s %v, want %s (for Runs.Close to interrupt)", id, status, err, serve.StatusRunning)
	}
	srv.Runs().Close(0)
}

// TestEndOfStdinAfterACancelledCall: a call the client cancelled before
// stdin ends is owed no reply: Serve returns, whether one is written for
// it or not (the SDK's version of the day writes one).
func TestEndOfStdinAfterACancelledCall(t *testing.T) {
	t.Parallel()
	server := serverOf(t, map[string]string{
		"long.yaml": "name: long\nagents:\n  - name: l\n    script: long.sh\n",
		"long.sh":   "#!/bin/sh\ncat >/dev/null\nsleep 600\n",
	})
	lines, err := serveLines(t, t.Context(), server, initLines+
		`{"jsonrpc":"2.0","id":"call","method":"tools/call","params":{"name":"long"}}`+"\n"+
		`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"call"}}`+"\n")
	if err != nil {
		t.Errorf("Serve: %v (it wrote %q)", err, lines)
	}
}

// serverOf is the MCP server of a new folder holding files (executable).
func serverOf(t *testing.T, files map[string]string) *mcp.Server {
	t.Helper()
	dir := t.TempDir()
	for name, body := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	server, err := New(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	return server
}
