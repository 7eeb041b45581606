package bdd

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/ensemble-run/ensemble/internal/fifotest"
)

// A report file is made private, but a device or a pipe named as the
// report (/dev/null) keeps its mode: made 0600, /dev/null would refuse
// every other user.
func TestCreatePrivateLeavesAPipesMode(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	plain := filepath.Join(dir, "r.xml")
	if err := os.WriteFile(plain, []byte("old"), 0o644); err != nil {
		t.Fatal(err)
	}
	fifo := filepath.Join(dir, "pipe")
	fifotest.Reader(t, fifo, 0o666)
	for path, want := range map[string]os.FileMode{plain: 0o600, fifo: 0o666} {
		f, err := CreatePrivate(path)
		if err != nil {
			t.Fatal(err)
		}
		f.Close()
		if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != want {
			t.Errorf("%s: mode %v, want %v", filepath.Base(path), fi.Mode().Perm(), want)
		}
	}
}

// --save-baseline makes its file readable by the team (0644), but not a
// pipe or a device named as the file (/dev/null).
func TestBaselineLeavesAPipesMode(t *testing.T) {
	t.Parallel()
	fifo := filepath.Join(t.TempDir(), "pipe")
	fifotest.Reader(t, fifo, 0o600)
	f, err := createBaseline(fifo)
	if err != nil {
		t.Fatal(err)
	}
	if err := writeBaseline(f, fifo, &Baseline{}); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Lstat(fifo); err != nil || fi.Mode()&os.ModeNamedPipe == 0 || fi.Mode().Perm() != 0o600 {
		t.Errorf("the pipe is now %v (%v)", fi.Mode(), err)
	}
}
