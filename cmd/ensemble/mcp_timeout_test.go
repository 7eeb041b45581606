package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ensemble-run/ensemble/internal/mcptest"
)

// Two MCP servers that never answer their initialize: the servers start
// together, and --timeout ends their start as it ends a run (exit 4),
// naming both, long before the per-server start timeout. The timeout
// leaves each server process ample time to start and say so, even on a
// loaded machine under the race detector (1 s did not).
func TestMCPStartIsBoundedByTheRunsTimeout(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	silent := func(name string) string {
		cmd, _ := mcptest.Command(t)
		env := map[string]string{mcptest.EnvVar: "silent", mcptest.StartedVar: filepath.Join(dir, name+".started")}
		b, err := json.Marshal(map[string]any{"command": cmd, "env": env})
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	writeFile(t, filepath.Join(dir, "e.yaml"), `name: e
models: {m: {provider: ollama, model: x}}
mcp_servers: {one: `+silent("one")+`, two: `+silent("two")+`}
agents:
  - {name: a, model_profile: m, tools: [one.x]}
  - {name: b, model_profile: m, tools: [two.x]}
`)
	done := make(chan outcome, 1)
	go func() {
		done <- ensembleEnv(t, nil, "run", filepath.Join(dir, "e.yaml"), "--timeout", "10s", "--output", "json")
	}()
	var o outcome
	select {
	case o = <-done:
	case <-time.After(100 * time.Second): // generous: the start timeout of one server is 2 minutes
		t.Fatal("the run did not end by its timeout while its MCP servers started")
	}
	if o.code != 4 {
		t.Errorf("exit %d, want 4 (timeout)\n%s", o.code, o.stderr)
	}
	for _, w := range []string{`"one"`, `"two"`, "timeout"} {
		if !strings.Contains(o.stderr, w) {
			t.Errorf("stderr lacks %s:\n%s", w, o.stderr)
		}
	}
	// Both were started while the first one's start still waited.
	for _, name := range []string{"one", "two"} {
		if _, err := os.Stat(filepath.Join(dir, name+".started")); err != nil {
			t.Errorf("server %q was not started: %v", name, err)
		}
	}
}
