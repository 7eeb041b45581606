//go:build !unix

package store

import "os"

func fsync(f *os.File) error { return f.Sync() }
