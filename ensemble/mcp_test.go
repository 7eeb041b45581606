package ensemble_test

import (
	"path/filepath"
	"testing"

	. "github.com/ensemble-run/ensemble/ensemble"
)

func TestMCPServersErrors(t *testing.T) {
	t.Parallel()
	_, err := Load(filepath.Join("testdata", "mcp-bad.yaml"), LoadOptions{Kinds: testKinds, LookupEnv: noEnv})
	checkErrors(t, err, "testdata/mcp-bad.yaml",
		`6:24: mcp server "both": give command or url, not both`,
		`7:12: mcp server "neither": command or url is required`,
		`8:14: mcp server "ftp": url must be an http:// or https:// URL, got "ftp://host/x"`,
		`9:34: mcp server "web": env is for a command, not a url`,
		`10:3: mcp_servers: "bad.name" is not a valid server name`,
		`11:11: mcp server "files2": command or url is required`,
		`11:12: unknown key "comand" in mcp server "files2"; did you mean "command"?`,
		`17:47: agent "a": tool "serch.q": unknown MCP server "serch"; did you mean "search"?`,
		`17:56: agent "a": tool "files." names no tool: write files.TOOL or files.*`,
		`17:64: agent "a": tool "fils.x": unknown MCP server "fils"; did you mean "files"?`,
	)
}

func TestMCPServersInherited(t *testing.T) {
	t.Parallel()
	e := loadOK(t, "mcp/parent.yaml", LoadOptions{Kinds: testKinds})
	files, search := e.MCPServer("files"), e.MCPServer("search")
	if files == nil || len(files.Command) != 2 || files.Dir != e.Dir || search.URL != "http://127.0.0.1:8931/mcp" {
		t.Fatalf("servers %+v %+v", files, search)
	}
	var kid *Ensemble
	for _, a := range e.Agents {
		if c, ok := a.Kind.(interface{ Children(*Agent) []*Ensemble }); ok && len(c.Children(a)) > 0 {
			kid = c.Children(a)[0]
		}
	}
	if kid == nil || kid.MCPServer("files") != files || kid.MCPServer("search") == search || kid.MCPServer("search").URL != "http://127.0.0.1:9999/mcp" {
		t.Fatalf("child's servers: %+v", kid.MCPServers)
	}
	if s := e.MCPServer("search"); s.Timeout != 0 {
		t.Errorf("timeout %v", s.Timeout)
	}
}

// TestMCPServerURLExpandsVariables: a server's url reads the environment as
// a profile's base_url does; an unset variable is an error naming it.
func TestMCPServerURLExpandsVariables(t *testing.T) {
	t.Parallel()
	file := "name: e\nmcp_servers:\n  t: {url: \"${MCP_URL}\"}\nagents:\n  - {name: a, ask: q}\n"
	env := func(k string) (string, bool) {
		if k == "MCP_URL" {
			return "http://127.0.0.1:9/mcp", true
		}
		return "", false
	}
	e, err := LoadBytes("e.yaml", []byte(file), LoadOptions{Kinds: testKinds, LookupEnv: env})
	if err != nil {
		t.Fatal(err)
	}
	if u := e.MCPServer("t").URL; u != "http://127.0.0.1:9/mcp" {
		t.Errorf("url %q", u)
	}
	_, err = LoadBytes("e.yaml", []byte(file), LoadOptions{Kinds: testKinds, LookupEnv: noEnv})
	checkErrors(t, err, "e.yaml", `3:12: mcp server "t": url uses ${MCP_URL}, which is not set; set it, or give a fallback with ${MCP_URL:-default}`)
}
