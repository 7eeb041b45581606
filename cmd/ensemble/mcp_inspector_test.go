package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestMCPInspector drives both MCP doors with the official MCP Inspector's
// CLI (npm @modelcontextprotocol/inspector): `mcp serve --state` over
// stdio and /mcp of `ensemble serve` over Streamable HTTP. A call of an
// ensemble whose ask agent waits is suspended (the CLI takes no
// elicitation), ensemble_answer completes it, and the run's result is a
// resource. It runs where the Inspector is: $MCP_INSPECTOR (its
// mcp-inspector script) or mcp-inspector on PATH; it is skipped
// elsewhere, but in CI (ENSEMBLE_CI), which installs it.
func TestMCPInspector(t *testing.T) {
	t.Parallel()
	inspector := os.Getenv("MCP_INSPECTOR")
	if inspector == "" {
		var err error
		if inspector, err = exec.LookPath("mcp-inspector"); err != nil {
			if os.Getenv("ENSEMBLE_CI") != "" {
				t.Fatal("mcp-inspector is not installed, and ENSEMBLE_CI is set: CI installs it (npm install -g @modelcontextprotocol/inspector, .ci/run)")
			}
			t.Skip("no MCP Inspector: set MCP_INSPECTOR to its mcp-inspector script (npm install @modelcontextprotocol/inspector)")
		}
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	home := t.TempDir() // the Inspector writes its catalog under ~/.mcp-inspector
	dir := "../../serve/testdata/ask"
	abs, err := filepath.Abs(dir)
	if err != nil {
		t.Fatal(err)
	}
	db := filepath.Join(t.TempDir(), "stdio.db")
	stdio := []string{"-e", asCLI + "=1", "-e", "PATH=" + os.Getenv("PATH"), // HOME is home: no profiles
		exe, "mcp", "serve", abs, "--state", db}
	base, token := startServe(t, dir, filepath.Join(t.TempDir(), "serve.db"))
	http := []string{base + "/mcp", "--header", "Authorization: Bearer " + token}
	for name, target := range map[string][]string{"stdio": stdio, "http": http} {
		t.Run(name, func(t *testing.T) {
			call := func(args ...string) map[string]any {
				t.Helper()
				cmd := exec.Command(inspector, append(append([]string{"--cli"}, target...), args...)...)
				cmd.Env = append(os.Environ(), "HOME="+home)
				var stderr strings.Builder
				cmd.Stderr = &stderr
				out, _ := cmd.Output() // an error result exits non-zero, its result printed all the same
				var v map[string]any
				dec := json.NewDecoder(strings.NewReader(string(out)))
				if err := dec.Decode(&v); err != nil {
					t.Fatalf("%v: %v\n%s\n%s", args, err, out, stderr.String())
				}
				return v
			}
			b, _ := json.Marshal(call("--method", "tools/list"))
			for _, tool := range []string{`"name":"ask"`, `"name":"ensemble_answer"`, `"name":"ensemble_status"`} {
				if !strings.Contains(string(b), tool) {
					t.Errorf("tools/list has no %s: %s", tool, b)
				}
			}
			sus, _ := call("--method", "tools/call", "--tool-name", "ask")["structuredContent"].(map[string]any)
			id, _ := sus["run_id"].(string)
			if sus["status"] != "suspended" || sus["agent"] != "approver" || id == "" {
				t.Fatalf("ask: %v", sus)
			}
			res := call("--method", "tools/call", "--tool-name", "ensemble_answer", "--tool-arg", "run_id="+id, "agent=approver", "answer=yes")
			b, _ = json.Marshal(res)
			if res["isError"] == true || !strings.Contains(string(b), `\"approver\": \"yes\"`) {
				t.Errorf("ensemble_answer: %s", b)
			}
			b, _ = json.Marshal(call("--method", "resources/read", "--uri", "ensemble://run/"+id))
			if !strings.Contains(string(b), `\"completion_reason\": \"completed\"`) {
				t.Errorf("the run's resource: %s", b)
			}
		})
	}
}
