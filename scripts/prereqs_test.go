// Package scripts holds the tests of the repository's shell scripts.
package scripts

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// fakeTools makes a directory with a stand-in for each tool: a script that
// answers `go env GOVERSION` and `go env CC` for go, and does nothing for
// the others. The check only looks tools up, so nothing real is needed.
func fakeTools(t *testing.T, goVersion string, tools ...string) string {
	t.Helper()
	dir := t.TempDir()
	for _, tool := range tools {
		body := "#!/bin/sh\n"
		if tool == "go" {
			body += "case \"$2\" in GOVERSION) echo " + goVersion + ";; CC) echo gcc;; esac\n"
		}
		if err := os.WriteFile(filepath.Join(dir, tool), []byte(body), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func TestPrereqs(t *testing.T) {
	t.Parallel()
	sh, err := exec.LookPath("sh")
	if err != nil {
		t.Fatal(err)
	}
	all := []string{"go", "make", "bash", "python3", "git"}
	tests := []struct {
		name      string
		goVersion string
		tools     []string
		race      bool
		want      string // stderr; empty: the check passes
	}{
		{"everything", "go1.26.0", all, false, ""},
		{"newer go", "go1.27rc1", all, false, ""},
		{"no python3", "go1.26.8", []string{"go", "make", "bash", "git"}, false,
			"missing prerequisites: python3 (see README.md)\n"},
		{"old go and no git or bash", "go1.25.4", []string{"go", "make", "python3"}, false,
			"missing prerequisites: go >= 1.26 (found go1.25.4), bash, git (see README.md)\n"},
		{"nothing", "", nil, false,
			"missing prerequisites: go >= 1.26, make, bash, python3, git (see README.md)\n"},
		{"race without a C compiler", "go1.26.0", all, true,
			"missing prerequisites: a C compiler for the race detector (gcc: apt-get install build-essential) (see README.md)\n"},
		{"race with one", "go1.26.0", append([]string{"gcc"}, all...), true, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			args := []string{"prereqs.sh"}
			if tt.race {
				args = append(args, "race")
			}
			cmd := exec.Command(sh, args...)
			cmd.Env = []string{"PATH=" + fakeTools(t, tt.goVersion, tt.tools...)}
			out, err := cmd.CombinedOutput()
			if string(out) != tt.want {
				t.Errorf("output %q, want %q", out, tt.want)
			}
			if (err != nil) != (tt.want != "") {
				t.Errorf("exit: %v, want a failure: %v", err, tt.want != "")
			}
		})
	}
}
