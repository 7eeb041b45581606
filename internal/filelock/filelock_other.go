//go:build unix && !linux

package filelock

import (
	"errors"
	"io"
	"os"

	"golang.org/x/sys/unix"
)

// Whole locks all of f (flock), or fails with ErrLocked.
func Whole(f *os.File) error {
	err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB)
	if errors.Is(err, unix.EWOULDBLOCK) {
		return ErrLocked
	}
	return err
}

// UnlockWhole releases Whole.
func UnlockWhole(f *os.File) { _ = unix.Flock(int(f.Fd()), unix.LOCK_UN) }

// Range locks the byte at off of f (a process-wide fcntl lock), or fails
// with ErrLocked.
func Range(f *os.File, off int64) error { return fcntl(f, unix.F_WRLCK, off) }

// UnlockRange releases Range.
func UnlockRange(f *os.File, off int64) { _ = fcntl(f, unix.F_UNLCK, off) }

func fcntl(f *os.File, typ int16, off int64) error {
	lk := unix.Flock_t{Type: typ, Whence: io.SeekStart, Start: off, Len: 1}
	err := unix.FcntlFlock(f.Fd(), unix.F_SETLK, &lk)
	if errors.Is(err, unix.EAGAIN) || errors.Is(err, unix.EACCES) {
		return ErrLocked
	}
	return err
}
