package main

import (
	"bufio"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// mcpSession opens a session on stdin, then calls the tool name.
func mcpSession(name string) string {
	return `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}` + "\n" +
		`{"jsonrpc":"2.0","method":"notifications/initialized"}` + "\n" +
		`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"` + name + `","arguments":{"input":"piped"}}}` + "\n"
}

// TestMCPServeAnswersBeforeStdinEnds: `printf ... | ensemble mcp serve
// DIR` with a call whose run takes half a second: stdin ends right after
// the call, and the call is still answered, with the run's result,
// before the server exits 0.
func TestMCPServeAnswersBeforeStdinEnds(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "nap.yaml"), "name: nap\nagents:\n  - name: n\n    script: nap.sh\n")
	writeFile(t, filepath.Join(dir, "nap.sh"), "#!/bin/sh\ncat >/dev/null\nsleep 0.5\necho '\"rested\"'\n")
	if err := os.Chmod(filepath.Join(dir, "nap.sh"), 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := cliCommand(t, []string{"ENSEMBLE_PROFILES="}, "mcp", "serve", dir)
	cmd.Stdin = strings.NewReader(mcpSession("nap")) // ends after the call
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%v: %s", err, stderr.String())
	}
	var reply struct {
		Result struct {
			IsError bool `json:"isError"`
			Content []struct {
				Text string `json:"text"`
			} `json:"content"`
		} `json:"result"`
	}
	for line := range strings.Lines(string(out)) {
		if strings.HasPrefix(line, `{"jsonrpc":"2.0","id":2,`) {
			if err := json.Unmarshal([]byte(line), &reply); err != nil {
				t.Fatal(err)
			}
		}
	}
	if len(reply.Result.Content) == 0 {
		t.Fatalf("no reply to the call:\n%s", out)
	}
	var res struct {
		Reason string         `json:"completion_reason"`
		Final  map[string]any `json:"final_state"`
	}
	if err := json.Unmarshal([]byte(reply.Result.Content[0].Text), &res); err != nil || reply.Result.IsError ||
		res.Reason != "completed" || res.Final["n"] != "rested" {
		t.Errorf("the call's reply: %v %+v %v", err, res, reply.Result.IsError)
	}
}

// TestMCPServeStopsAtOnceOnSIGTERM: SIGTERM while a call's run sleeps
// for ten minutes ends the server at once, the run cancelled.
func TestMCPServeStopsAtOnceOnSIGTERM(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	marker := filepath.Join(dir, "started")
	writeFile(t, filepath.Join(dir, "long.yaml"), "name: long\nagents:\n  - name: l\n    script: long.sh\n")
	writeFile(t, filepath.Join(dir, "long.sh"), "#!/bin/sh\ncat >/dev/null\ntouch "+marker+"\nsleep 600\n")
	if err := os.Chmod(filepath.Join(dir, "long.sh"), 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := cliCommand(t, []string{"ENSEMBLE_PROFILES="}, "mcp", "serve", dir)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true} // a failure below ends its script too
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }()
	if _, err := io.WriteString(in, mcpSession("long")); err != nil {
		t.Fatal(err)
	}
	go func() { _, _ = io.Copy(io.Discard, bufio.NewReader(out)) }()
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(20 * time.Millisecond) {
		if _, err := os.Stat(marker); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the run's script never started")
		}
	}
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case <-done:
	case <-time.After(2 * time.Minute): // the run sleeps 10 minutes
		t.Fatal("mcp serve went on after SIGTERM")
	}
}
