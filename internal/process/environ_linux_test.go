package process

import (
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// TestHideEnviron runs in a child process (so this test binary stays
// dumpable): after HideEnviron the process is not dumpable, and a script it
// starts cannot read its environment through /proc/$PPID/environ.
func TestHideEnviron(t *testing.T) {
	t.Parallel()
	if os.Getenv("ENSEMBLE_TEST_HIDE_ENVIRON") == "1" {
		return
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestHideEnvironChild$")
	cmd.Env = append(os.Environ(), "ENSEMBLE_TEST_HIDE_ENVIRON=1", "ENSEMBLE_TEST_SECRET=sk-hidden-0123456789")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("child: %v\n%s", err, out)
	}
	got := string(out)
	if !strings.Contains(got, "dumpable=0") {
		t.Fatalf("the process is still dumpable:\n%s", got)
	}
	if os.Geteuid() == 0 {
		return // root reads any process's environment (documented limit)
	}
	if strings.Contains(got, "sk-hidden-0123456789") || !strings.Contains(got, "read=denied") {
		t.Fatalf("a child read the parent's environment:\n%s", got)
	}
}

func TestHideEnvironChild(t *testing.T) {
	if os.Getenv("ENSEMBLE_TEST_HIDE_ENVIRON") != "1" {
		t.Skip("run by TestHideEnviron")
	}
	HideEnviron()
	d, err := unix.PrctlRetInt(unix.PR_GET_DUMPABLE, 0, 0, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	fmt.Printf("dumpable=%d\n", d)
	out, err := exec.Command("sh", "-c", `cat /proc/$PPID/environ && echo read=ok || echo read=denied`).CombinedOutput()
	if err != nil {
		t.Fatal(err)
	}
	os.Stdout.Write(out)
}
