package report

import (
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/ensemble-run/ensemble/internal/fifotest"
)

// A report to a device or a pipe (/dev/stdout, /dev/null) is written into
// it, never renamed over it: renamed, a temporary file replaced the device
// with a regular file (/dev/null for the whole machine, run as root).
func TestReportToAPipeKeepsThePipe(t *testing.T) {
	t.Parallel()
	fifo := filepath.Join(t.TempDir(), "pipe")
	r := fifotest.Reader(t, fifo, 0o600)
	f, err := CreateFile(fifo)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write([]byte("# Run report: x\n")); err != nil {
		t.Fatal(err)
	}
	if err := f.Commit(nil); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Lstat(fifo); err != nil || fi.Mode()&os.ModeNamedPipe == 0 {
		t.Fatalf("the pipe was replaced: %v %v", fi.Mode(), err)
	}
	if got, err := io.ReadAll(r); err != nil || string(got) != "# Run report: x\n" {
		t.Errorf("read %q, %v", got, err)
	}
}

// A report to a symbolic link (/dev/stdout is one) is written into the
// file behind it, and the link stays a link.
func TestReportThroughALinkKeepsTheLink(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	target, link := filepath.Join(dir, "out.md"), filepath.Join(dir, "link.md")
	if err := os.WriteFile(target, []byte("# Run report: old\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
	f, err := CreateFile(link)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write([]byte("# Run report: new\n")); err != nil {
		t.Fatal(err)
	}
	if err := f.Commit(nil); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Lstat(link); err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Fatalf("the link was replaced: %v", err)
	}
	if got, _ := os.ReadFile(target); string(got) != "# Run report: new\n" {
		t.Errorf("the file behind the link holds %q", got)
	}
}
