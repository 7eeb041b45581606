// Package filelock takes the exclusive, non-blocking file locks of the state
// file (the whole file) and of the state database (one byte per run).
//
// On Linux both are open-file-description locks: they belong to the open
// file, not to the process, so they exclude other opens in the same process
// too, hold while other descriptors of the file are closed (SQLite closes
// its own), and are never shared with a forked child. Other Unix systems
// have no such locks: Whole is a flock there (per open file, but shared
// with a child that inherits the descriptor until it executes its program)
// and Range a process-wide fcntl lock, which excludes other processes only.
package filelock

import "errors"

// ErrLocked is the error of a lock held elsewhere; the callers replace it
// with their own, which says what is locked.
var ErrLocked = errors.New("locked")
