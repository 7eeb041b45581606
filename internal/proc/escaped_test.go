package proc

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// A process a script started that left its group (setsid) is stopped with
// the script: when the script is cancelled, and when the script ended but
// the process holds its pipes. Without the mark both outlived the run.
func TestEscapedProcessesAreStopped(t *testing.T) {
	t.Parallel()
	if runtime.GOOS != "linux" {
		t.Skip("followed through /proc, on Linux only")
	}
	if _, err := exec.LookPath("setsid"); err != nil {
		t.Skip("no setsid here")
	}
	for _, tt := range []struct {
		name   string
		script string
		cancel bool
	}{
		// The escaped process closes the script's pipes: only the stop
		// finds it.
		{"cancelled", `setsid sh -c 'echo $$ > "$PIDFILE"; exec sleep 300' </dev/null >/dev/null 2>&1 &
sleep 300
`, true},
		// The script ends at once; the escaped process keeps its stdout.
		{"holding the pipes", `setsid sh -c 'echo $$ > "$PIDFILE"; exec sleep 300' &
while [ ! -s "$PIDFILE" ]; do sleep 0.05; done
`, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			script, pidfile := filepath.Join(dir, "escape.sh"), filepath.Join(dir, "pid")
			if err := os.WriteFile(script, []byte("#!/bin/sh\n"+tt.script), 0o755); err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			done := make(chan error, 1)
			go func() {
				_, err := Run(ctx, Spec{Path: script, Env: append(os.Environ(), "PIDFILE="+pidfile)})
				done <- err
			}()
			pid := waitForPID(t, pidfile)
			if tt.cancel {
				cancel()
			}
			select {
			case err := <-done:
				if tt.cancel && !errors.As(err, new(*CancelledError)) {
					t.Errorf("Run: %v, want cancelled", err)
				} else if !tt.cancel && err != nil {
					t.Errorf("Run: %v", err)
				}
			case <-time.After(2 * time.Minute):
				t.Fatal("Run did not return")
			}
			for deadline := time.Now().Add(time.Minute); alive(pid); time.Sleep(50 * time.Millisecond) {
				if time.Now().After(deadline) {
					syscall.Kill(pid, syscall.SIGKILL)
					t.Fatalf("process %d, which left the script's group, outlived it", pid)
				}
			}
		})
	}
}

// waitForPID reads the process id the script writes to pidfile.
func waitForPID(t *testing.T, pidfile string) int {
	t.Helper()
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		b, _ := os.ReadFile(pidfile)
		if s := strings.TrimSpace(string(b)); strings.HasSuffix(string(b), "\n") && s != "" {
			pid, err := strconv.Atoi(s)
			if err != nil {
				t.Fatal(err)
			}
			return pid
		}
	}
	t.Fatal("the script wrote no process id")
	return 0
}

// alive reports whether pid runs: not gone, nor a zombie waiting to be reaped.
func alive(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	_, after, ok := strings.Cut(string(b), ") ")
	return ok && !strings.HasPrefix(after, "Z") && !strings.HasPrefix(after, "X")
}

func TestMarkedEnv(t *testing.T) {
	t.Parallel()
	got := MarkedEnv([]string{"A=1", MarkEnv + "=old", "B=2"}, MarkEnv+"=new")
	if want := []string{MarkEnv + "=new", "A=1", "B=2"}; strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("markedEnv = %q, want %q", got, want)
	}
	if a, b := NewMark(), NewMark(); a == b || !strings.HasPrefix(a, MarkEnv+"=") {
		t.Errorf("marks %q and %q", a, b)
	}
	// KillEscaped searches only for a mark: "" would match the empty
	// entry after every environment's last NUL, and kill every process.
	for m, want := range map[string]bool{"": false, MarkEnv: false, MarkEnv + "=": false, "PATH=/usr/bin": false, NewMark(): true} {
		if isMark(m) != want {
			t.Errorf("isMark(%q) = %v", m, !want)
		}
	}
}
