package store

import (
	"errors"
	"fmt"
	"io"
	"os"

	"golang.org/x/sys/unix"
)

// lockRange takes an exclusive open-file-description lock on the byte at
// off of f, or fails with ErrLocked. Unlike a process-wide fcntl lock (the
// kind SQLite takes on its own bytes), it is not dropped when SQLite closes
// another descriptor of the file, and it is never shared with a forked
// child.
func lockRange(f *os.File, off int64) error {
	lk := unix.Flock_t{Type: unix.F_WRLCK, Whence: io.SeekStart, Start: off, Len: 1}
	err := unix.FcntlFlock(f.Fd(), unix.F_OFD_SETLK, &lk)
	switch {
	case err == nil:
		return nil
	case errors.Is(err, unix.EAGAIN), errors.Is(err, unix.EACCES):
		return ErrLocked
	}
	return fmt.Errorf("cannot lock the run: %w", err)
}

func unlockRange(f *os.File, off int64) {
	lk := unix.Flock_t{Type: unix.F_UNLCK, Whence: io.SeekStart, Start: off, Len: 1}
	_ = unix.FcntlFlock(f.Fd(), unix.F_OFD_SETLK, &lk)
}
