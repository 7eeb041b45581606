package store

import (
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/ensemble-run/ensemble/internal/filelock"
)

// Lock makes this process the one writer of the run until the database is
// closed (or Unlock): another process that tries fails with ErrLocked.
// The lock is an open-file-description lock on one byte of the database
// file, at an offset of its own per run far beyond SQLite's own lock bytes;
// the kernel releases it when the process ends, however it ends, so no lock
// file is left behind.
//
// A held lock is tried again for up to lockWait: a process killed while it
// was starting a script leaves that script, until it has started, sharing
// the file the lock is on (a forked process shares its parent's open files
// until it executes its program), so the lock outlives the killed process
// by a moment.
func (db *DB) Lock(r *RunInfo) error {
	return db.lockWaiting(lockOffset(r.seq), "run "+r.ID)
}

// lockWaiting takes the lock byte at off (see Lock), trying again for up to
// lockWait while it is held; what names the holder in the error.
func (db *DB) lockWaiting(off int64, what string) error {
	deadline := time.Now().Add(lockWait)
	for {
		err := lockRange(db.lock, off)
		switch {
		case err == nil:
			return nil
		case !errors.Is(err, ErrLocked):
			return &Error{Path: db.path, Err: err}
		case time.Now().After(deadline):
			return &Error{Path: db.path, Err: fmt.Errorf("%s: %w", what, err)}
		}
		time.Sleep(lockWait / 20)
	}
}

// lockWait is how long Lock waits for a lock held by another process.
const lockWait = time.Second

// Unlock releases the lock of a run.
func (db *DB) Unlock(r *RunInfo) { filelock.UnlockRange(db.lock, lockOffset(r.seq)) }

// lockRange locks the byte at off of f, or fails with ErrLocked.
func lockRange(f *os.File, off int64) error {
	switch err := filelock.Range(f, off); {
	case err == nil:
		return nil
	case errors.Is(err, filelock.ErrLocked):
		return ErrLocked
	default:
		return fmt.Errorf("cannot lock the run: %w", err)
	}
}

// lockOffset is the byte locked for run seq: above 2^40, far beyond
// SQLite's lock bytes (at 2^30) and any database that fits a disk.
func lockOffset(seq int64) int64 { return 1<<40 + seq }
