package process

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// nobody is the user the check runs as when the tests run as root (CI
// does): root reads any process's environment, dumpable or not, so the
// check means something only for an unprivileged user.
const nobody = 65534

// TestHideEnviron runs in a child process (so this test binary stays
// dumpable): after HideEnviron the process is not dumpable, and a script it
// starts cannot read its environment through /proc/$PPID/environ. A second
// child that does not call HideEnviron must read it: without that, the
// check would pass on a machine where /proc hides every environment anyway.
// As root, both children run as the user nobody.
func TestHideEnviron(t *testing.T) {
	t.Parallel()
	if os.Getenv("ENSEMBLE_TEST_HIDE_ENVIRON") != "" {
		return
	}
	bin, cred := os.Args[0], (*syscall.Credential)(nil)
	if os.Geteuid() == 0 {
		bin = copyForNobody(t)
		cred = &syscall.Credential{Uid: nobody, Gid: nobody, Groups: []uint32{}}
	}
	const secret = "sk-hidden-0123456789"
	child := func(mode string) string {
		var out []byte
		var err error
		// The binary was just copied: a process another test forks while
		// the copy was open for writing holds it open until it execs, and
		// exec then fails with "text file busy" for that moment.
		for try := 0; try < 20; try++ {
			cmd := exec.Command(bin, "-test.run=^TestHideEnvironChild$")
			cmd.Dir = filepath.Dir(bin)
			cmd.Env = append(os.Environ(), "ENSEMBLE_TEST_HIDE_ENVIRON="+mode, "ENSEMBLE_TEST_SECRET="+secret)
			cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
			if out, err = cmd.CombinedOutput(); !errors.Is(err, syscall.ETXTBSY) {
				break
			}
			time.Sleep(50 * time.Millisecond)
		}
		if err != nil {
			t.Fatalf("child (%s, credential %+v): %v\n%s", mode, cred, err, out)
		}
		return string(out)
	}

	got := child("hide")
	if !strings.Contains(got, "dumpable=0") {
		t.Fatalf("the process is still dumpable:\n%s", got)
	}
	if strings.Contains(got, secret) || !strings.Contains(got, "read=denied") {
		t.Fatalf("a child read the parent's environment:\n%s", got)
	}
	got = child("show")
	if !strings.Contains(got, "dumpable=1") || !strings.Contains(got, secret) || !strings.Contains(got, "read=ok") {
		t.Fatalf("without HideEnviron a child could not read the parent's environment, so the check proves nothing here:\n%s", got)
	}
}

// copyForNobody copies the test binary into a folder the user nobody can
// enter (go test's own folder is its owner's alone) and returns its path.
func copyForNobody(t *testing.T) string {
	dir, err := os.MkdirTemp("", "hideenviron")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	src, err := os.Open(os.Args[0])
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	bin := filepath.Join(dir, "process.test")
	dst, err := os.OpenFile(bin, os.O_CREATE|os.O_WRONLY|os.O_EXCL, 0o755)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(dst, src); err != nil {
		t.Fatal(err)
	}
	if err := dst.Close(); err != nil {
		t.Fatal(err)
	}
	return bin
}

func TestHideEnvironChild(t *testing.T) {
	mode := os.Getenv("ENSEMBLE_TEST_HIDE_ENVIRON")
	if mode == "" {
		t.Skip("run by TestHideEnviron")
	}
	if mode == "hide" {
		HideEnviron()
	}
	d, err := unix.PrctlRetInt(unix.PR_GET_DUMPABLE, 0, 0, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	fmt.Printf("dumpable=%d uid=%d\n", d, os.Geteuid())
	// Only the secret's own line is printed: a failure's log shows
	// nothing else of the environment.
	out, err := exec.Command("sh", "-c", `tr '\0' '\n' </proc/$PPID/environ 2>/dev/null | grep '^ENSEMBLE_TEST_SECRET=' && echo read=ok || echo read=denied`).CombinedOutput()
	if err != nil {
		t.Fatal(err)
	}
	os.Stdout.Write(out)
}
