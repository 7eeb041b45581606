package main

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestMCPServeState drives `ensemble mcp serve DIR --state FILE` (the
// real binary, over stdio): an ask agent's question is elicited from a
// client that takes elicitation, and a client that does not gets a
// suspended result, answered with ensemble_answer; both runs are saved.
func TestMCPServeState(t *testing.T) {
	t.Parallel()
	db := filepath.Join(t.TempDir(), "mcp.db")
	for _, elicit := range []bool{true, false} {
		cmd := cliCommand(t, []string{"ENSEMBLE_PROFILES="}, "mcp", "serve", "../../serve/testdata/ask", "--state", db)
		var stderr strings.Builder
		cmd.Stderr = &stderr
		opts := &mcp.ClientOptions{}
		if elicit {
			opts.ElicitationHandler = func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
				return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"answer": "elicited"}}, nil
			}
		}
		cs, err := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, opts).Connect(t.Context(), &mcp.CommandTransport{Command: cmd}, nil)
		if err != nil {
			t.Fatalf("%v: %s", err, stderr.String())
		}
		res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "ask"})
		if err != nil {
			t.Fatal(err)
		}
		text := res.Content[0].(*mcp.TextContent).Text
		if !elicit {
			var sus struct {
				Status string `json:"status"`
				RunID  string `json:"run_id"`
				Agent  string `json:"agent"`
			}
			json.Unmarshal([]byte(text), &sus)
			if sus.Status != "suspended" || sus.Agent != "approver" {
				t.Fatalf("not suspended: %s", text)
			}
			res, err = cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "ensemble_answer",
				Arguments: map[string]any{"run_id": sus.RunID, "agent": "approver", "answer": "answered"}})
			if err != nil {
				t.Fatal(err)
			}
			text = res.Content[0].(*mcp.TextContent).Text
		}
		want := `"approver": "answered"`
		if elicit {
			want = `"approver": "elicited"`
		}
		if res.IsError || !strings.Contains(text, `"completion_reason": "completed"`) || !strings.Contains(text, want) {
			t.Errorf("elicit %v: %v %s", elicit, res.IsError, text)
		}
		cs.Close()
	}
	out := ensembleEnv(t, nil, "state", "list", db)
	if strings.Count(out.stdout, "completed") != 2 {
		t.Errorf("state list:\n%s", out.stdout)
	}
}

// TestServeMCPEndpoint: `ensemble serve` (the binary) serves its
// ensembles as MCP tools at /mcp, behind its token.
func TestServeMCPEndpoint(t *testing.T) {
	t.Parallel()
	db := filepath.Join(t.TempDir(), "serve.db")
	base, token := startServe(t, "../../serve/testdata/ask", db)
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil).Connect(t.Context(),
		&mcp.StreamableClientTransport{Endpoint: base + "/mcp", HTTPClient: &http.Client{Transport: bearerTransport{token}}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	var names []string
	for tool, err := range cs.Tools(t.Context(), nil) {
		if err != nil {
			t.Fatal(err)
		}
		names = append(names, tool.Name)
	}
	if strings.Join(names, ",") != "ask,ensemble_answer,ensemble_status" {
		t.Errorf("tools %v", names)
	}
	res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "ask"})
	if err != nil || !strings.Contains(res.Content[0].(*mcp.TextContent).Text, `"suspended"`) {
		t.Fatalf("call: %v %+v", err, res)
	}
}

// startServe starts `ensemble serve dir` (the binary) on a free port of
// the loopback, its runs in db, and returns its URL and token; it is
// killed when the test ends.
func startServe(t *testing.T, dir, db string) (base, token string) {
	t.Helper()
	cmd := cliCommand(t, []string{"ENSEMBLE_PROFILES="}, "serve", dir, "--listen", "127.0.0.1:0", "--state", db, "--no-ui")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	lines := bufio.NewScanner(out)
	for lines.Scan() {
		if m := regexp.MustCompile(`^ensemble serve: (http://\S+) `).FindStringSubmatch(lines.Text()); m != nil {
			base = m[1]
		}
		if tok, ok := strings.CutPrefix(lines.Text(), "token: "); ok {
			token = tok
			break
		}
	}
	go io.Copy(io.Discard, out)
	if base == "" || token == "" {
		t.Fatal("serve did not start")
	}
	return base, token
}
