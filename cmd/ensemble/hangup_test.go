package main

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// A hangup (the terminal closed, the SSH connection dropped) stops a run
// as SIGTERM does: its scripts and what they started are killed, and the
// run ends as cancelled (exit 130). Its default handling ended the
// process at once, and left them running.
func TestHangupStopsTheScripts(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "e.yaml"), "name: hup\ninput: x\nagents:\n  - {name: s, script: s.sh}\n")
	body := "#!/bin/sh\nsh -c 'echo $$ > \"$HUP_DIR/grandchild.tmp\"; mv \"$HUP_DIR/grandchild.tmp\" \"$HUP_DIR/grandchild\"; exec sleep 1000' &\n" +
		"echo $$ > \"$HUP_DIR/script.tmp\"; mv \"$HUP_DIR/script.tmp\" \"$HUP_DIR/script\"\nsleep 1000\n"
	if err := os.WriteFile(filepath.Join(dir, "s.sh"), []byte(body), 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := cliCommand(t, []string{"ENSEMBLE_PROFILES=", "HUP_DIR=" + dir}, "run", filepath.Join(dir, "e.yaml"), "--output", "json")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() { cmd.Process.Kill() })
	pid := func(name string) int {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			return 0
		}
		n, _ := strconv.Atoi(strings.TrimSpace(string(b)))
		return n
	}
	poll(t, "the script and its child to start", 60*time.Second, func() bool { return pid("script") > 0 && pid("grandchild") > 0 })
	script, grandchild := pid("script"), pid("grandchild")
	t.Cleanup(func() { syscall.Kill(-script, syscall.SIGKILL) })
	if err := cmd.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	var err error
	select {
	case err = <-exited:
	case <-time.After(60 * time.Second):
		t.Fatal("the run did not end after SIGHUP")
	}
	if code := exitCode(t, err); code != 130 {
		t.Errorf("exit %d after SIGHUP, want 130: %s", code, stderr.String())
	}
	for name, p := range map[string]int{"the script": script, "its child": grandchild} {
		poll(t, name+" to be gone", 60*time.Second, func() bool {
			return errors.Is(syscall.Kill(p, 0), syscall.ESRCH) || zombie(p)
		})
	}
}

// zombie reports whether pid has exited and waits for its parent (init,
// once the run is gone) to reap it.
func zombie(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return i >= 0 && i+2 < len(s) && s[i+2] == 'Z'
}

// Started with the hangup ignored (nohup), a run goes on through one: it
// ends as it would have, with its result.
func TestHangupIgnoredUnderNohup(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "e.yaml"), "name: nohup\ninput: x\nagents:\n  - {name: s, script: s.sh}\n")
	body := "#!/bin/sh\ncat >/dev/null\ntouch \"$HUP_DIR/started\"\nwhile [ ! -e \"$HUP_DIR/go-on\" ]; do sleep 0.05; done\necho '\"done\"'\n"
	if err := os.WriteFile(filepath.Join(dir, "s.sh"), []byte(body), 0o755); err != nil {
		t.Fatal(err)
	}
	cli := cliCommand(t, []string{"ENSEMBLE_PROFILES=", "HUP_DIR=" + dir}, "run", filepath.Join(dir, "e.yaml"), "--output", "json")
	// sh ignores the hangup, then becomes the binary, which inherits that.
	cmd := exec.Command("sh", append([]string{"-c", `trap "" HUP; exec "$0" "$@"`}, cli.Args...)...)
	cmd.Path, _ = exec.LookPath("sh")
	cmd.Env = cli.Env
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill() })
	exists := func(name string) bool { _, err := os.Stat(filepath.Join(dir, name)); return err == nil }
	poll(t, "the script to start", 60*time.Second, func() bool { return exists("started") })
	if err := cmd.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(dir, "go-on"), "")
	if err := cmd.Wait(); err != nil {
		t.Fatalf("a hangup under nohup: %v\n%s", err, stderr.String())
	}
	if !strings.Contains(stdout.String(), `"completion_reason": "completed"`) {
		t.Errorf("the run did not complete:\n%s\n%s", stdout.String(), stderr.String())
	}
}
