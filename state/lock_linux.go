package state

import (
	"errors"
	"fmt"
	"io"
	"os"

	"golang.org/x/sys/unix"
)

// lockFile takes an exclusive open-file-description lock on all of f, or
// fails with ErrLocked. Unlike a process-wide fcntl lock, it excludes other
// opens in the same process too, and unlike flock it is never shared with
// a forked child, whatever that child does with its copy of the descriptor.
func lockFile(f *os.File) error {
	lk := unix.Flock_t{Type: unix.F_WRLCK, Whence: io.SeekStart}
	err := unix.FcntlFlock(f.Fd(), unix.F_OFD_SETLK, &lk)
	switch {
	case err == nil:
		return nil
	case errors.Is(err, unix.EAGAIN), errors.Is(err, unix.EACCES):
		return ErrLocked
	}
	return fmt.Errorf("cannot lock it: %w", err)
}

func unlockFile(f *os.File) {
	lk := unix.Flock_t{Type: unix.F_UNLCK, Whence: io.SeekStart}
	_ = unix.FcntlFlock(f.Fd(), unix.F_OFD_SETLK, &lk)
}
