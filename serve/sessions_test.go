package serve

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

// The new runs of an ensemble whose agents use no MCP server share one
// session (one more for streamed runs), closed with the server.
func TestNewRunsShareASession(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("python3"); err != nil {
		t.Skip("python3 is not on PATH (make python-link; PATH=$PWD/bin/python:$PATH)")
	}
	dir := t.TempDir()
	if err := os.CopyFS(dir, os.DirFS("testdata/count")); err != nil {
		t.Fatal(err)
	}
	srv, err := New(Options{Paths: []string{dir}, Listen: "127.0.0.1:0", State: filepath.Join(dir, "serve.db"), Token: "t", NoUI: true})
	if err != nil {
		t.Fatal(err)
	}
	rs := srv.Runs()
	ctx := context.Background()
	for i, stream := range []bool{false, false, true} {
		id, _, err := rs.Start(ctx, "count", nil, StartOptions{Stream: stream})
		if err != nil {
			t.Fatal(err)
		}
		if st, err := rs.Wait(ctx, id, time.Minute); err != nil || st != "completed" {
			t.Fatalf("run %d: %s %v", i, st, err)
		}
	}
	rs.sess.mu.Lock()
	n := len(rs.sess.open)
	rs.sess.mu.Unlock()
	if n != 2 {
		t.Fatalf("%d sessions for 3 runs, 2 of them streamed: want 2", n)
	}
	rs.Close(time.Second)
	if len(rs.sess.open) != 0 {
		t.Fatalf("%d sessions left open by Close", len(rs.sess.open))
	}
	if usesMCP(rs.byName["count"].e) {
		t.Fatal("count uses no MCP server")
	}
}
