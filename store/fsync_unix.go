//go:build unix

package store

import (
	"os"
	"syscall"
)

// fsync is fsync(2), what SQLite calls: on macOS, os.File.Sync makes an
// F_FULLFSYNC, which flushes the whole drive's cache, far more than the
// flush of the WAL asks for.
func fsync(f *os.File) error { return syscall.Fsync(int(f.Fd())) }
