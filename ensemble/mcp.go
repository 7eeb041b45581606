package ensemble

import (
	"maps"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"
)

// MCPServer is a server of MCP tools (docs/format.md#mcp-servers): a
// command started for the run and spoken to over its stdin and stdout, or
// the URL of a streamable HTTP server. Exactly one of Command and URL is set.
type MCPServer struct {
	File    string // the file that declares it, as the load was given it
	Pos     Pos
	Name    string
	Command []string          // the program and its arguments; run in Dir
	Env     map[string]string // added to the environment of scripts
	URL     string
	Timeout time.Duration // limit of one tool call; 0 = the agent's
	Dir     string        // the folder of the file that declares it
}

var (
	mcpServerKeys      = []string{"command", "env", "url", "timeout_seconds"}
	mcpServerNameRegex = regexp.MustCompile(`^[A-Za-z0-9_-]{1,32}$`)
)

// MCPServer returns the MCP server with that name, declared by the file or
// inherited from its parent, or nil.
func (e *Ensemble) MCPServer(name string) *MCPServer { return e.MCPServers[name] }

// SplitMCPTool splits an agent's tool name SERVER.TOOL (TOOL may be *):
// ok is false for the name of a tool of the file's tools: list.
func SplitMCPTool(name string) (server, tool string, ok bool) {
	return strings.Cut(name, ".")
}

// mcpServers decodes the mcp_servers: mapping, then adds the servers of the
// parent file that this one does not declare.
func (d *decoder) mcpServers(f field) map[string]*MCPServer {
	servers := map[string]*MCPServer{}
	if f.ok() {
		m := d.mapping(f.val, f.name)
		for _, name := range slices.Sorted(maps.Keys(m.all())) {
			fd := m.get(name)
			if !mcpServerNameRegex.MatchString(name) {
				d.errorf(fd.key, "mcp_servers: %q is not a valid server name: use 1 to 32 of A-Z, a-z, 0-9, _ and -", name)
			}
			where := "mcp server " + `"` + name + `"`
			sm := d.mapping(fd.val, where, mcpServerKeys...)
			if sm == nil {
				continue
			}
			s := &MCPServer{File: d.file, Pos: pos(fd.key), Name: name, Dir: d.dir}
			if c := sm.get("command"); c.ok() {
				s.Command = d.strings(c)
				d.need(c, len(s.Command) == 0)
				if len(s.Command) > 0 && s.Command[0] == "" {
					d.bad(c, "must start with a program")
				}
			}
			s.Env = d.env(sm.get("env"))
			if u := sm.get("url"); u.ok() {
				var expanded bool
				s.URL, expanded = d.expand(u) // ${VAR}, as in a profile's base_url
				if p, err := url.Parse(s.URL); expanded && (err != nil || (p.Scheme != "http" && p.Scheme != "https") || p.Host == "") {
					d.bad(u, "must be an http:// or https:// URL, got %q", s.URL)
				}
			}
			switch {
			case sm.get("command").ok() && sm.get("url").ok():
				d.errorf(sm.get("url").key, "%s: give command or url, not both", where)
			case !sm.get("command").ok() && !sm.get("url").ok():
				d.errorf(fd.val, "%s: command or url is required", where)
			case sm.get("url").ok() && sm.get("env").ok():
				d.errorf(sm.get("env").key, "%s: env is for a command, not a url", where)
			}
			s.Timeout = d.seconds(sm.get("timeout_seconds"))
			servers[name] = s
		}
	}
	for name, s := range d.parentMCP {
		if servers[name] == nil {
			servers[name] = s
		}
	}
	d.mcp = servers
	return servers
}

// mcpTool checks an agent's tool SERVER.TOOL (n, at its position): the
// server must be declared; which tools it has is known only when it runs.
func (d *decoder) mcpTool(n *yaml.Node, name, where string) {
	server, tool, _ := SplitMCPTool(name)
	switch {
	case d.mcp[server] == nil && len(d.mcp) == 0:
		d.errorf(n, "%s: tool %q names the MCP server %q, but the file declares no mcp_servers", where, name, server)
	case d.mcp[server] == nil:
		d.errorf(n, "%s: tool %q: unknown MCP server %q%s", where, name, server, suggest(server, slices.Sorted(maps.Keys(d.mcp))))
	case tool == "":
		d.errorf(n, "%s: tool %q names no tool: write %s.TOOL or %s.*", where, name, server, server)
	}
}
