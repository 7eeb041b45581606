package state

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/ensemble-run/ensemble/internal/filelock"
)

// ErrLocked is returned by Lock when another process holds the lock.
var ErrLocked = errors.New("another ensemble process is using this state file")

// Locked is a state file held by one run, for as long as that run writes
// it: two processes resuming (or running into) the same file would both run
// agents and overwrite each other's saves. The lock is on the file itself,
// through symbolic links, so nothing is left beside it; since every save
// replaces the file by a rename, Save moves the lock to the new file before
// it takes its place. The lock goes away with the process, however it ends.
type Locked struct {
	path string   // the file, symbolic links resolved
	f    *os.File // the locked file; nil while there is none yet
}

// Lock locks the state file at path, which need not exist yet: then the
// first Save creates it, unless another process got there first.
func Lock(path string) (*Locked, error) {
	resolved, err := ResolvePath(path)
	if err != nil {
		return nil, &FileError{Path: path, Err: err}
	}
	for {
		f, err := os.OpenFile(resolved, os.O_RDWR, 0)
		if errors.Is(err, fs.ErrNotExist) {
			return &Locked{path: resolved}, nil
		}
		if err != nil {
			return nil, &FileError{Path: path, Err: fmt.Errorf("cannot open it to lock it: %w", unwrapPath(err))}
		}
		if err := lockFile(f); err != nil {
			f.Close()
			return nil, &FileError{Path: path, Err: err}
		}
		// The file may have been replaced between the open and the lock (a
		// save of the process that held it): then lock the new one.
		held, err1 := f.Stat()
		now, err2 := os.Stat(resolved)
		if err1 == nil && err2 == nil && os.SameFile(held, now) {
			return &Locked{path: resolved, f: f}, nil
		}
		filelock.UnlockWhole(f)
		f.Close()
	}
}

// ResolvePath follows the symbolic links of path, also to a file that does
// not exist yet, and makes it absolute, so that a later change of directory
// cannot matter: what is written is the file the links lead to (and, for a
// state database, its -wal file beside it).
func ResolvePath(path string) (string, error) {
	for range 40 {
		fi, err := os.Lstat(path)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			return filepath.Abs(path)
		case err != nil:
			return "", err
		case fi.Mode()&fs.ModeSymlink == 0:
			return filepath.EvalSymlinks(path)
		}
		target, err := os.Readlink(path)
		if err != nil {
			return "", err
		}
		if !filepath.IsAbs(target) {
			target = filepath.Join(filepath.Dir(path), target)
		}
		path = target
	}
	return "", errors.New("too many levels of symbolic links")
}

// Save writes f as Save does, to the locked file, and keeps it locked.
func (l *Locked) Save(f *File) error {
	data, err := encode(f)
	if err != nil {
		return err
	}
	var next *os.File
	err = writeAtomic(l.path, data, func(tmp *os.File) error {
		if err := lockFile(tmp); err != nil {
			return err
		}
		next = tmp
		if l.f == nil {
			// A new file: it must not replace one that another run has
			// created since Lock. A file system without hard links gets
			// the rename, after a last look.
			err := os.Link(tmp.Name(), l.path)
			if errors.Is(err, fs.ErrExist) {
				return ErrLocked
			}
			if err == nil {
				return os.Remove(tmp.Name())
			}
			if _, lerr := os.Lstat(l.path); lerr == nil {
				return ErrLocked
			}
		}
		return os.Rename(tmp.Name(), l.path)
	})
	if err != nil {
		return err
	}
	l.release()
	l.f = next
	return nil
}

// Unlock releases the lock.
func (l *Locked) Unlock() {
	l.release()
	l.f = nil
}

// release unlocks and closes the locked file. The explicit unlock matters: a
// child process forked at this moment shares the open file until it execs,
// and closing alone would leave the lock held by that share.
func (l *Locked) release() {
	if l.f != nil {
		filelock.UnlockWhole(l.f)
		l.f.Close()
	}
}

// Resumable reports whether the file holds a run that has not finished: it
// is still going, was killed, timed out or was interrupted, so `ensemble
// resume` would continue it.
func (f *File) Resumable() bool {
	switch f.CompletionReason {
	case "", "timeout", "cancelled", "awaiting_input", "budget_exceeded":
		return true
	}
	return false
}

// lockFile locks all of f for this process's open file, or fails with
// ErrLocked.
func lockFile(f *os.File) error {
	switch err := filelock.Whole(f); {
	case err == nil:
		return nil
	case errors.Is(err, filelock.ErrLocked):
		return ErrLocked
	default:
		return fmt.Errorf("cannot lock it: %w", err)
	}
}
