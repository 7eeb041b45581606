package state_test

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/ensemble-run/ensemble/state"
)

// TestMain lets the tests run this binary as another process that tries to
// lock a file: ENSEMBLE_TEST_LOCK=path exits 0 when it gets the lock, 3 when
// another process holds it.
func TestMain(m *testing.M) {
	if path := os.Getenv("ENSEMBLE_TEST_LOCK"); path != "" {
		l, err := state.Lock(path)
		switch {
		case errors.Is(err, state.ErrLocked):
			os.Exit(3)
		case err != nil:
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		l.Unlock()
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// lockedElsewhere reports whether another process is refused the lock.
func lockedElsewhere(t *testing.T, path string) bool {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "ENSEMBLE_TEST_LOCK="+path)
	out, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	switch {
	case err == nil:
		return false
	case errors.As(err, &ee) && ee.ExitCode() == 3:
		return true
	}
	t.Fatalf("the other process: %v %s", err, out)
	return false
}

func TestLockIsExclusiveUntilReleased(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := filepath.Join(dir, "run.json")
	l, err := state.Lock(path)
	if err != nil {
		t.Fatal(err)
	}
	// No file yet: the first save creates it, locked.
	if err := l.Save(sample()); err != nil {
		t.Fatal(err)
	}
	// Locks belong to open files: a second open, even in this process, is
	// refused, as another process is.
	if _, err := state.Lock(path); !errors.Is(err, state.ErrLocked) {
		t.Fatalf("second lock: %v, want ErrLocked", err)
	}
	if !lockedElsewhere(t, path) {
		t.Fatal("another process got the lock")
	}
	// Each save replaces the file; the lock moves to the new one.
	for range 3 {
		if err := l.Save(sample()); err != nil {
			t.Fatal(err)
		}
		if _, err := state.Lock(path); !errors.Is(err, state.ErrLocked) {
			t.Fatalf("lock after a save: %v, want ErrLocked", err)
		}
	}
	l.Unlock()
	if lockedElsewhere(t, path) {
		t.Fatal("another process is refused after unlock")
	}
	again, err := state.Lock(path)
	if err != nil {
		t.Fatalf("after unlock: %v", err)
	}
	again.Unlock()
	// Nothing is left beside the state file.
	if entries, _ := os.ReadDir(dir); len(entries) != 1 {
		t.Fatalf("directory holds %v", entries)
	}
}

// Two runs starting a new state file at once: the second one's first save
// must not replace the first one's file.
func TestLockOfANewFileRefusesASecondCreator(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "run.json")
	a, err := state.Lock(path)
	if err != nil {
		t.Fatal(err)
	}
	b, err := state.Lock(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Save(sample()); err != nil {
		t.Fatal(err)
	}
	if err := b.Save(sample()); !errors.Is(err, state.ErrLocked) {
		t.Fatalf("second creator: %v, want ErrLocked", err)
	}
	a.Unlock()
	b.Unlock()
}

// A symbolic link and the file it names are one state file: locked
// together, and a save through the link replaces the file, not the link.
func TestLockAndSaveFollowSymlinks(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := filepath.Join(dir, "m.json")
	link := filepath.Join(dir, "link-to-m.json")
	if err := state.Save(path, sample()); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("m.json", link); err != nil {
		t.Fatal(err)
	}
	l, err := state.Lock(link)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := state.Lock(path); !errors.Is(err, state.ErrLocked) {
		t.Fatalf("lock of the file behind a locked link: %v, want ErrLocked", err)
	}
	f := sample()
	runTurnsTo(f.State, 7)
	if err := l.Save(f); err != nil {
		t.Fatal(err)
	}
	l.Unlock()
	runTurnsTo(f.State, 8)
	if err := state.Save(link, f); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Lstat(link); err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Fatalf("the link was replaced: %v %v", fi.Mode(), err)
	}
	if g, err := state.Load(path); err != nil || g.State.TurnCount != 8 {
		t.Fatalf("the file behind the link: %v %v", g, err)
	}
}

// A child process forked while the lock is held shares the locked file
// until it execs; that must never make the lock look held after it was
// released. Scripts start at any moment during a run.
func TestLockIsNotHeldByForkedChildren(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "run.json")
	if err := state.Save(path, sample()); err != nil {
		t.Fatal(err)
	}
	var done atomic.Bool
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for !done.Load() {
				_ = exec.Command("/bin/true").Run()
			}
		})
	}
	defer func() {
		done.Store(true)
		wg.Wait()
	}()
	for i := range 2000 {
		l, err := state.Lock(path)
		if err != nil {
			t.Fatalf("cycle %d: %v", i, err)
		}
		l.Unlock()
	}
}
