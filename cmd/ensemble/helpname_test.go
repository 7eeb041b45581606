package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// The binary started through a path (bin/ensemble after make build,
// /usr/local/bin/ensemble) names itself ensemble in --help, never by that
// path, in the root's help and a command's.
func TestHelpShowsTheProgramNameNotItsPath(t *testing.T) {
	t.Parallel()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(t.TempDir(), "bin")
	if err := os.Mkdir(bin, 0o755); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(bin, "ensemble")
	if err := os.Symlink(exe, path); err != nil {
		t.Skipf("no symbolic link: %v", err)
	}
	for _, args := range [][]string{{"--help"}, {"run", "--help"}, {"state", "--help"}} {
		cmd := exec.Command(path, args...)
		cmd.Env = append(os.Environ(), asCLI+"=1")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("%v: %v\n%s", args, err, out)
		}
		if strings.Contains(string(out), bin) {
			t.Errorf("%v names the path %s:\n%s", args, path, out)
		}
		want := "Usage:\n  ensemble " + strings.Join(args[:len(args)-1], " ")
		if !strings.Contains(string(out), strings.TrimSpace(want)) {
			t.Errorf("%v lacks %q:\n%s", args, want, out)
		}
	}
}
