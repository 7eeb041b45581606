package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The commands the messages suggest start the way the user ran this
// binary: by its name when the PATH finds it by that name, by the path
// they typed otherwise. Not parallel: it sets PATH.
func TestProgramName(t *testing.T) {
	onPath, elsewhere := t.TempDir(), filepath.Join(t.TempDir(), "a dir")
	for _, dir := range []string{onPath, elsewhere} {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "ensemble"), []byte("#!/bin/sh\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	t.Setenv("PATH", onPath)
	for _, tt := range []struct{ arg0, want string }{
		{"", "ensemble"},
		{"ensemble", "ensemble"},
		{filepath.Join(onPath, "ensemble"), "ensemble"}, // go install, started by its path
		{filepath.Join(elsewhere, "ensemble"), "'" + elsewhere + "/ensemble'"}, // another binary of that name is on the PATH
		{"bin/ensemble", "bin/ensemble"},                                       // make build; no such file here
	} {
		if got := programName(tt.arg0); got != tt.want {
			t.Errorf("programName(%q) = %q, want %q", tt.arg0, got, tt.want)
		}
	}

	// init's first steps, a resume hint.
	var out, errb bytes.Buffer
	dir := filepath.Join(t.TempDir(), "mine")
	std := &stdio{in: strings.NewReader(""), out: &out, err: &errb, prog: "bin/ensemble"}
	if code := run(context.Background(), []string{"init", dir}, std); code != 0 {
		t.Fatalf("init: exit %d: %s", code, errb.String())
	}
	if want := "  bin/ensemble run " + filepath.Join(dir, "ensemble.yaml"); !strings.Contains(out.String(), want) {
		t.Errorf("init says\n%s\nwant %q", out.String(), want)
	}
	if got := std.resumeCommand("run s.db"); got != "bin/ensemble resume 'run s.db'" {
		t.Errorf("resume command %q", got)
	}
}
