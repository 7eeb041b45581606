package filelock

import (
	"errors"
	"io"
	"os"

	"golang.org/x/sys/unix"
)

// Whole locks all of f, or fails with ErrLocked.
func Whole(f *os.File) error { return ofd(f, unix.F_WRLCK, 0, 0) }

// UnlockWhole releases Whole.
func UnlockWhole(f *os.File) { _ = ofd(f, unix.F_UNLCK, 0, 0) }

// Range locks the byte at off of f, or fails with ErrLocked.
func Range(f *os.File, off int64) error { return ofd(f, unix.F_WRLCK, off, 1) }

// UnlockRange releases Range.
func UnlockRange(f *os.File, off int64) { _ = ofd(f, unix.F_UNLCK, off, 1) }

// ofd sets an open-file-description lock; n == 0 is to the end of the file
// and beyond.
func ofd(f *os.File, typ int16, off, n int64) error {
	lk := unix.Flock_t{Type: typ, Whence: io.SeekStart, Start: off, Len: n}
	err := unix.FcntlFlock(f.Fd(), unix.F_OFD_SETLK, &lk)
	if errors.Is(err, unix.EAGAIN) || errors.Is(err, unix.EACCES) {
		return ErrLocked
	}
	return err
}
