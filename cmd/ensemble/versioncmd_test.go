package main

import (
	"strings"
	"testing"
)

// `ensemble version` prints what --version prints, takes no argument, and
// shell completion offers it among the commands.
func TestVersionCommand(t *testing.T) {
	t.Parallel()
	flag := ensembleCmd(t, "", "--version")
	cmd := ensembleCmd(t, "", "version")
	if flag.code != 0 || cmd.code != 0 || cmd.stdout != flag.stdout || !strings.HasPrefix(cmd.stdout, "ensemble version ") {
		t.Fatalf("version: exit %d %q %s; --version: exit %d %q", cmd.code, cmd.stdout, cmd.stderr, flag.code, flag.stdout)
	}
	if o := ensembleCmd(t, "", "version", "x"); o.code != 2 || !strings.Contains(o.stderr, "version takes no argument") {
		t.Errorf("version x: exit %d %s", o.code, o.stderr)
	}
	o := ensembleCmd(t, "", "__complete", "ver")
	if o.code != 0 || !strings.Contains(o.stdout, "version\t") {
		t.Errorf("completion of ver: exit %d\n%s%s", o.code, o.stdout, o.stderr)
	}
}
