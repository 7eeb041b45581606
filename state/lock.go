package state

import (
	"errors"
	"fmt"
	"os"
	"syscall"
)

// ErrLocked is returned by Lock when another process holds the lock.
var ErrLocked = errors.New("another ensemble process is using this state file")

// Lock takes an exclusive lock on the state file at path, for as long as
// one run writes it: two processes resuming (or running into) the same file
// would both run agents and overwrite each other's saves. The lock is an
// flock(2) on path + ".lock", released by the returned function or when the
// process ends, however it ends; the lock file itself is left behind, empty.
func Lock(path string) (unlock func(), err error) {
	f, err := os.OpenFile(path+".lock", os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, &FileError{Path: path, Err: fmt.Errorf("cannot create its lock file: %w", err)}
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, &FileError{Path: path, Err: ErrLocked}
		}
		return nil, &FileError{Path: path, Err: fmt.Errorf("cannot lock it: %w", err)}
	}
	return func() { _ = f.Close() }, nil
}

// Resumable reports whether the file holds a run that has not finished: it
// is still going, was killed, timed out or was interrupted, so `ensemble
// resume` would continue it.
func (f *File) Resumable() bool {
	switch f.CompletionReason {
	case "", "timeout", "cancelled":
		return true
	}
	return false
}
