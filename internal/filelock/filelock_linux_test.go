package filelock

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// Open-file-description locks: a second open of the same file, in the same
// process, is refused until the first lets go; runs (bytes) lock apart.
func TestLocksExcludeOtherOpensOfTheFile(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "f")
	open := func() *os.File {
		f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { f.Close() })
		return f
	}
	a, b := open(), open()

	if err := Whole(a); err != nil {
		t.Fatal(err)
	}
	if err := Whole(b); !errors.Is(err, ErrLocked) {
		t.Fatalf("second whole-file lock: %v, want ErrLocked", err)
	}
	if err := Range(b, 1<<40); !errors.Is(err, ErrLocked) {
		t.Fatalf("a byte of a locked file: %v, want ErrLocked", err)
	}
	UnlockWhole(a)
	if err := Whole(b); err != nil {
		t.Fatalf("after unlock: %v", err)
	}
	UnlockWhole(b)

	if err := Range(a, 1<<40); err != nil {
		t.Fatal(err)
	}
	if err := Range(b, 1<<40+1); err != nil {
		t.Fatalf("another byte: %v", err)
	}
	if err := Range(b, 1<<40); !errors.Is(err, ErrLocked) {
		t.Fatalf("the same byte: %v, want ErrLocked", err)
	}
	UnlockRange(a, 1<<40)
	if err := Range(b, 1<<40); err != nil {
		t.Fatalf("after unlock: %v", err)
	}
}
