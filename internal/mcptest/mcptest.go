// Package mcptest is an MCP server for tests, built with the official SDK:
// a test binary serves it over stdio when re-executed with EnvVar set
// (Main, from TestMain), or over streamable HTTP in process (HTTP). It is
// not an API.
package mcptest

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// EnvVar set to "stdio" makes a test binary that calls Main serve the test
// server on its stdin and stdout instead of running its tests; set to
// "silent", the binary reads its stdin and never answers (a server that
// hangs while it starts).
const EnvVar = "ENSEMBLE_TEST_MCP_SERVER"

// Main serves the server over stdio and exits when EnvVar says so; call it
// first in TestMain.
func Main() {
	mode := os.Getenv(EnvVar)
	if mode != "stdio" && mode != "silent" {
		return
	}
	if path := os.Getenv(StartedVar); path != "" {
		if err := os.WriteFile(path, []byte("started\n"), 0o644); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
	}
	if mode == "silent" {
		// A server that never answers: it reads its stdin to the end.
		_, _ = io.Copy(io.Discard, os.Stdin)
		os.Exit(0)
	}
	s := NewServer()
	// With ExitVar set, over stdio only (in process it would end the
	// tests): exit {text} writes TEXT to stderr and ends the server with
	// status 3.
	if os.Getenv(ExitVar) != "" {
		addExit(s)
	}
	if err := s.Run(context.Background(), &mcp.StdioTransport{}); err != nil {
		os.Exit(1)
	}
	os.Exit(0)
}

// StartedVar set to a path in a stdio server's env makes the server write
// that file as it starts: a test can tell whether it was started at all.
const StartedVar = "ENSEMBLE_TEST_MCP_STARTED"

// ExitVar set to anything in a stdio server's env gives it the tool exit.
const ExitVar = "ENSEMBLE_TEST_MCP_EXIT"

func addExit(s *mcp.Server) {
	mcp.AddTool(s, &mcp.Tool{Name: "exit", Description: "Ends the server."},
		func(_ context.Context, _ *mcp.CallToolRequest, a textArgs) (*mcp.CallToolResult, any, error) {
			fmt.Fprintln(os.Stderr, a.Text)
			os.Exit(3)
			return nil, nil, nil
		})
}

// Command is the command of a stdio server: the test binary itself, with
// EnvVar in the server's env.
func Command(t testing.TB) (command []string, env map[string]string) {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return []string{exe, "-test.run=^$"}, map[string]string{EnvVar: "stdio"}
}

// HTTP serves the server over streamable HTTP until the test ends and
// returns its URL.
func HTTP(t testing.TB) string {
	t.Helper()
	s := NewServer()
	srv := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, nil))
	t.Cleanup(srv.Close)
	return srv.URL + "/mcp"
}

type textArgs struct {
	Text string `json:"text" jsonschema:"the text to echo"`
}

type nameArgs struct {
	Name string `json:"name" jsonschema:"a name"`
}

type meetArgs struct {
	Name  string `json:"name"`
	After string `json:"after,omitempty" jsonschema:"answer only once this name has called"`
}

type noArgs struct{}

// NewServer returns the test server: its tools are
//   - echo {text}: "echo: TEXT";
//   - fail: an error result, "it broke";
//   - env {name}: the variable's value in the server's environment, or
//     "<unset>";
//   - block: answers only when the call is cancelled;
//   - meet {name, after}: answers "met NAME", but only once a call named AFTER
//     has arrived (30 s at most, then "alone"): calls that overlap.
func NewServer() *mcp.Server {
	s := mcp.NewServer(&mcp.Implementation{Name: "ensemble-test", Version: "1"}, nil)
	text := func(s string) *mcp.CallToolResult {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: s}}}
	}
	mcp.AddTool(s, &mcp.Tool{Name: "echo", Description: "Echoes its text."},
		func(_ context.Context, _ *mcp.CallToolRequest, a textArgs) (*mcp.CallToolResult, any, error) {
			return text("echo: " + a.Text), nil, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "fail", Description: "Always fails."},
		func(context.Context, *mcp.CallToolRequest, noArgs) (*mcp.CallToolResult, any, error) {
			r := text("it broke")
			r.IsError = true
			return r, nil, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "env", Description: "A variable of the server's environment."},
		func(_ context.Context, _ *mcp.CallToolRequest, a nameArgs) (*mcp.CallToolResult, any, error) {
			v, ok := os.LookupEnv(a.Name)
			if !ok {
				v = "<unset>"
			}
			return text(v), nil, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "block", Description: "Never answers."},
		func(ctx context.Context, _ *mcp.CallToolRequest, _ noArgs) (*mcp.CallToolResult, any, error) {
			<-ctx.Done()
			return nil, nil, ctx.Err()
		})
	var (
		mu      sync.Mutex
		arrived = map[string]chan struct{}{}
	)
	ch := func(name string) chan struct{} {
		mu.Lock()
		defer mu.Unlock()
		if arrived[name] == nil {
			arrived[name] = make(chan struct{})
		}
		return arrived[name]
	}
	mcp.AddTool(s, &mcp.Tool{Name: "meet", Description: "Answers once another call has arrived."},
		func(ctx context.Context, _ *mcp.CallToolRequest, a meetArgs) (*mcp.CallToolResult, any, error) {
			c := ch(a.Name)
			mu.Lock()
			select {
			case <-c:
			default:
				close(c)
			}
			mu.Unlock()
			if a.After != "" {
				select {
				case <-ch(a.After):
				case <-time.After(30 * time.Second):
					return text("alone"), nil, nil
				case <-ctx.Done():
					return nil, nil, ctx.Err()
				}
			}
			return text("met " + a.Name), nil, nil
		})
	return s
}
