// Package fifotest makes named pipes for tests of writers that must write
// into a pipe or a device (/dev/stdout, /dev/null) rather than replace it.
package fifotest

import (
	"os"
	"syscall"
	"testing"
)

// Reader makes a FIFO at path with mode perm (past the umask) and opens
// its read end without blocking, so that a writer can open the other end;
// the read end is closed when the test ends. A system without FIFOs skips
// the test.
func Reader(t testing.TB, path string, perm os.FileMode) *os.File {
	t.Helper()
	if err := syscall.Mkfifo(path, uint32(perm)); err != nil {
		t.Skip("no FIFO here:", err)
	}
	if err := os.Chmod(path, perm); err != nil {
		t.Fatal(err)
	}
	r, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	return r
}
