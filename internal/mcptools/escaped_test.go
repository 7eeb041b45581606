package mcptools_test

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ensemble-run/ensemble/ensemble"
	"github.com/ensemble-run/ensemble/internal/mcptest"
	"github.com/ensemble-run/ensemble/internal/mcptools"
	"github.com/ensemble-run/ensemble/kinds"
)

// A process an MCP server started that left its process group (setsid)
// is killed when the servers close, as the group is.
func TestServersCloseKillsWhatLeftTheGroup(t *testing.T) {
	t.Parallel()
	if runtime.GOOS != "linux" {
		t.Skip("followed through /proc, on Linux only")
	}
	if _, err := exec.LookPath("setsid"); err != nil {
		t.Skip("no setsid here")
	}
	dir := t.TempDir()
	pidfile := filepath.Join(dir, "pid")
	cmd, env := mcptest.Command(t)
	// The server starts a process of its own in a session of its own, then
	// becomes the test server.
	wrapped := append([]string{"sh", "-c", `setsid sleep 300 </dev/null >/dev/null 2>&1 & echo $! > "$PIDFILE"; exec "$@"`, "sh"}, cmd...)
	env["PIDFILE"] = pidfile
	server, _ := json.Marshal(map[string]any{"command": wrapped, "env": env})
	path := filepath.Join(dir, "e.yaml")
	if err := os.WriteFile(path, []byte(`name: m
models: {m: {provider: ollama, model: x}}
mcp_servers: {t: `+string(server)+`}
agents:
  - {name: a, model_profile: m, tools: [t.echo]}
`), 0o644); err != nil {
		t.Fatal(err)
	}
	e, err := ensemble.Load(path, kinds.Builtin().Load(ensemble.LoadOptions{}))
	if err != nil {
		t.Fatal(err)
	}
	s, err := mcptools.Start(t.Context(), e, mcptools.Options{})
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(pidfile)
	if err != nil {
		s.Close()
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		s.Close()
		t.Fatal(err)
	}
	s.Close()
	for deadline := time.Now().Add(time.Minute); running(pid); time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			syscall.Kill(pid, syscall.SIGKILL)
			t.Fatalf("process %d, which the server started outside its group, outlived it", pid)
		}
	}
}

// running reports whether pid runs: not gone, nor a zombie.
func running(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	_, after, ok := strings.Cut(string(b), ") ")
	return ok && !strings.HasPrefix(after, "Z") && !strings.HasPrefix(after, "X")
}
