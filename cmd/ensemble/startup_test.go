package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// TestStartsNoGoCommand: the binary does not run `go` when it starts (godog
// would run `go env GOTOOLDIR`, see internal/startup), and PATH is back for
// what the run starts: a script agent found through /usr/bin/env runs.
func TestStartsNoGoCommand(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	marker := filepath.Join(dir, "go-ran")
	fake := filepath.Join(dir, "go")
	if err := os.WriteFile(fake, []byte("#!/bin/sh\necho \"$@\" >> "+marker+"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	// The fake works: a lookup of go on this PATH finds it and it leaves
	// its mark.
	path := "PATH=" + dir + string(os.PathListSeparator) + os.Getenv("PATH")
	probe := exec.Command("go", "env", "GOTOOLDIR")
	probe.Env = append(os.Environ(), path)
	probe.Path = fake
	if err := probe.Run(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(marker); err != nil {
		t.Fatalf("the fake go left no mark: %v", err)
	}
	os.Remove(marker)

	ex := "../../examples/hello-scripts/"
	cmd := cliCommand(t, []string{path}, "run", ex+"ensemble.yaml", "--output", "json", "-q")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("run: %v\n%s", err, out)
	}
	if b, err := os.ReadFile(marker); err == nil {
		t.Fatalf("the binary ran go at start-up: go %s", b)
	}
}
