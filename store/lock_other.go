//go:build unix && !linux

package store

import (
	"errors"
	"fmt"
	"io"
	"os"

	"golang.org/x/sys/unix"
)

// lockRange takes an exclusive fcntl lock on the byte at off of f, or fails
// with ErrLocked. Without open-file-description locks, the lock belongs to
// the process: it holds while the database stays open (SQLite keeps its
// descriptors until then), and excludes other processes only.
func lockRange(f *os.File, off int64) error {
	lk := unix.Flock_t{Type: unix.F_WRLCK, Whence: io.SeekStart, Start: off, Len: 1}
	err := unix.FcntlFlock(f.Fd(), unix.F_SETLK, &lk)
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
	_ = unix.FcntlFlock(f.Fd(), unix.F_SETLK, &lk)
}
