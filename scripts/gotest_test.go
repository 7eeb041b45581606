package scripts

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// timedOut is what go test prints for a package whose test binary ran past
// -timeout (Go 1.26), shortened: the panic, the running tests, and the
// stacks of every goroutine (hundreds of lines in a large package).
const timedOut = "=== RUN   TestQuick\n--- PASS: TestQuick (0.00s)\n" +
	"panic: test timed out after 2s\n" +
	"\trunning tests:\n" +
	"\t\tTestSleeps/other (2s)\n" +
	"\t\tTestSleeps/sub (2s)\n" +
	"\n" +
	"goroutine 3 [running]:\n" +
	"testing.(*M).startAlarm.func1()\n" +
	"\t/usr/local/go/src/testing/testing.go:2802 +0x354\n" +
	"created by time.goFunc\n" +
	"\t/usr/local/go/src/time/sleep.go:215 +0x2d\n" +
	"\n" +
	"goroutine 1 [chan receive]:\n" +
	"testing.(*T).Run(0x14e7d492c248, {0x5860d7?, 0x0?}, 0x592ef8)\n" +
	"\t/usr/local/go/src/testing/testing.go:2109 +0x4e5\n" +
	"main.main()\n" +
	"\t_testmain.go:48 +0x9b\n" +
	"FAIL\tsleepy\t2.117s\n" +
	"ok  \tother\t0.010s\n" +
	"FAIL\n"

// gotest runs scripts/gotest.sh with a command that prints out and exits
// with status, and returns what it printed and its exit status.
func gotest(t *testing.T, out string, status int) (string, int) {
	t.Helper()
	sample := filepath.Join(t.TempDir(), "out")
	if err := os.WriteFile(sample, []byte(out), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("sh", "gotest.sh", "sh", "-c", `cat "$1"; echo on stderr >&2; exit "$2"`, "sh", sample, string(rune('0'+status)))
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	code := 0
	if ee, ok := errors.AsType[*exec.ExitError](err); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	if stderr.String() != "on stderr\n" {
		t.Errorf("stderr %q, want the command's", stderr.String())
	}
	return stdout.String(), code
}

// A test that timed out is one line naming the running tests: the
// goroutines' stacks are dropped, go test's lines after them kept, and the
// exit status is the command's.
func TestGotestTimeoutIsOneLine(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, out string
		status    int
		want      string
	}{
		{"timed out", timedOut, 1, "=== RUN   TestQuick\n--- PASS: TestQuick (0.00s)\n" +
			"panic: test timed out after 2s; running: TestSleeps/other (2s), TestSleeps/sub (2s)\n" +
			"FAIL\tsleepy\t2.117s\nok  \tother\t0.010s\nFAIL\n"},
		{"cut after the panic", "panic: test timed out after 30m0s\n\trunning tests:\n\t\tTestRun (30m0s)\n", 2,
			"panic: test timed out after 30m0s; running: TestRun (30m0s)\n"},
		{"passed", "ok  \tpkg\t0.1s\n", 0, "ok  \tpkg\t0.1s\n"},
		{"another panic goes through", "panic: boom\n\ngoroutine 1 [running]:\nmain.main()\nFAIL\tpkg\t0.1s\n", 1,
			"panic: boom\n\ngoroutine 1 [running]:\nmain.main()\nFAIL\tpkg\t0.1s\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, code := gotest(t, tc.out, tc.status)
			if got != tc.want || code != tc.status {
				t.Errorf("got %q, exit %d; want %q, exit %d", got, code, tc.want, tc.status)
			}
			if strings.Count(got, "\n") > strings.Count(tc.want, "\n") {
				t.Errorf("%d lines", strings.Count(got, "\n"))
			}
		})
	}
}

// go test's lines come through as they are printed, not when a block of
// them fills (mawk reads a pipe by blocks unless told otherwise): the
// command prints a line, then waits for the test to have read it.
func TestGotestPassesLinesAtOnce(t *testing.T) {
	t.Parallel()
	seen := filepath.Join(t.TempDir(), "seen")
	cmd := exec.Command("sh", "gotest.sh", "sh", "-c",
		`echo "ok  	first"; i=0; while [ ! -e "$1" ] && [ $i -lt 600 ]; do sleep 0.1; i=$((i+1)); done; [ -e "$1" ] && echo "ok  	second" || echo "the first line was held back"`, "sh", seen)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	r := bufio.NewReader(out)
	if line, err := r.ReadString('\n'); err != nil || line != "ok  \tfirst\n" {
		t.Fatalf("read %q, %v", line, err)
	}
	if err := os.WriteFile(seen, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	rest, _ := io.ReadAll(r)
	if err := cmd.Wait(); err != nil || string(rest) != "ok  \tsecond\n" {
		t.Errorf("then %q, %v", rest, err)
	}
}
