// Package readcap reads files and streams whole, but never past a limit:
// an endless stream (a FIFO, /dev/zero, a stuck pipe) or a file far larger
// than anything the program expects fails with a TooLargeError instead of
// exhausting the memory.
package readcap

import (
	"fmt"
	"io"
	"os"
)

// TooLargeError is a file or stream longer than its limit.
type TooLargeError struct{ Limit int64 }

func (e *TooLargeError) Error() string {
	return "larger than " + Size(e.Limit)
}

// Size writes n bytes as a person reads it: 16 MiB, 4 GiB, 2999 bytes.
func Size(n int64) string {
	switch {
	case n >= 1<<30 && n%(1<<30) == 0:
		return fmt.Sprintf("%d GiB", n>>30)
	case n >= 1<<20 && n%(1<<20) == 0:
		return fmt.Sprintf("%d MiB", n>>20)
	case n >= 1<<10 && n%(1<<10) == 0:
		return fmt.Sprintf("%d KiB", n>>10)
	}
	return fmt.Sprintf("%d bytes", n)
}

// ReadAll reads r to its end, at most limit bytes.
func ReadAll(r io.Reader, limit int64) ([]byte, error) {
	data, err := io.ReadAll(io.LimitReader(r, limit+1))
	if err != nil {
		return nil, err
	}
	if int64(len(data)) > limit {
		return nil, &TooLargeError{Limit: limit}
	}
	return data, nil
}

// ReadFile reads the file at path, at most limit bytes: a regular file
// larger than that is refused before anything is read, anything else (a
// FIFO, a device) is read up to the limit. Its errors are os.Open's (an
// *os.PathError) and ReadAll's.
func ReadFile(path string, limit int64) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if fi, err := f.Stat(); err == nil && fi.Mode().IsRegular() && fi.Size() > limit {
		return nil, &TooLargeError{Limit: limit}
	}
	return ReadAll(f, limit)
}
