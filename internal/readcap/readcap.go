// Package readcap reads files and streams whole, but never past a limit:
// an endless stream (a FIFO, /dev/zero, a stuck pipe) or a file far larger
// than anything the program expects fails with a TooLargeError instead of
// exhausting the memory.
package readcap

import (
	"bytes"
	"fmt"
	"io"
	"math"
	"os"
	"strconv"
	"strings"
)

// TooLargeError is a file or stream longer than its limit.
type TooLargeError struct{ Limit int64 }

func (e *TooLargeError) Error() string {
	return "larger than " + Size(e.Limit)
}

// NotTextError is a file or stream holding a NUL byte, which none of the
// text formats read whole (YAML, JSON, JSON Lines) may hold: /dev/zero or
// /dev/urandom given for a file is refused at its first NUL, not after
// the limit was read.
type NotTextError struct{ Offset int64 }

func (e *NotTextError) Error() string {
	return fmt.Sprintf("not a text file (a NUL byte at offset %d)", e.Offset)
}

// Size writes n bytes as ParseSize reads it, in the largest binary unit
// that divides it: 16MiB, 4GiB, 64KiB, 2999 bytes.
func Size(n int64) string {
	for i := 2; i >= 0; i-- { // GiB, MiB, KiB
		if u := sizeUnits[i]; n >= u.n && n%u.n == 0 {
			return fmt.Sprintf("%d%s", n/u.n, u.suffix)
		}
	}
	return fmt.Sprintf("%d bytes", n)
}

// sizeUnits are the units ParseSize takes, the longest suffixes first.
var sizeUnits = []struct {
	suffix string
	n      int64
}{
	{"KiB", 1 << 10}, {"MiB", 1 << 20}, {"GiB", 1 << 30},
	{"KB", 1e3}, {"MB", 1e6}, {"GB", 1e9}, {"B", 1},
}

// ParseSize reads a size in bytes: a count, or a whole number with a unit
// (KB, MB, GB: powers of 1000; KiB, MiB, GiB: powers of 1024; B). It must
// be positive.
func ParseSize(s string) (int64, error) {
	num, unit := strings.TrimSpace(s), int64(1)
	for _, u := range sizeUnits {
		if cut, ok := strings.CutSuffix(num, u.suffix); ok {
			num, unit = strings.TrimSpace(cut), u.n
			break
		}
	}
	n, err := strconv.ParseInt(num, 10, 64)
	if err != nil || n < 1 || n > math.MaxInt64/unit {
		return 0, fmt.Errorf("want a positive size such as 1048576, 64KiB or 20MB, got %q", s)
	}
	return n * unit, nil
}

// ReadAll reads r to its end, at most limit bytes. A stream of unknown
// size is read in blocks, joined once at its end: a stream that goes past
// the limit has taken about the limit in memory when it fails (a buffer
// grown as it read took over twice that, with the copies it left behind).
func ReadAll(r io.Reader, limit int64) ([]byte, error) {
	return readStream(r, limit, false)
}

// ReadText is ReadAll for text: a NUL byte fails it as it is read.
func ReadText(r io.Reader, limit int64) ([]byte, error) {
	return readStream(r, limit, true)
}

// maxBlock is the largest block a stream is read in.
const maxBlock = 8 << 20

// readStream reads r to its end in blocks (512 bytes, then twice the one
// before, up to maxBlock), failing past limit bytes, and with text at a
// NUL byte; one block is returned as it is, more are joined into one
// buffer of their size.
func readStream(r io.Reader, limit int64, text bool) ([]byte, error) {
	lr := io.LimitReader(r, limit+1)
	var blocks [][]byte
	var total int64
	for size := int64(512); ; size = min(2*size, maxBlock) {
		b := make([]byte, min(size, limit+1-total))
		n, err := io.ReadFull(lr, b)
		if text {
			if i := bytes.IndexByte(b[:n], 0); i >= 0 {
				return nil, &NotTextError{Offset: total + int64(i)}
			}
		}
		total += int64(n)
		if n > 0 {
			blocks = append(blocks, b[:n])
		}
		if total > limit {
			return nil, &TooLargeError{Limit: limit}
		}
		if err == io.EOF || err == io.ErrUnexpectedEOF {
			break
		}
		if err != nil {
			return nil, err
		}
	}
	switch len(blocks) {
	case 0:
		return []byte{}, nil
	case 1:
		return blocks[0], nil
	}
	out := make([]byte, 0, total)
	for i, b := range blocks {
		out = append(out, b...)
		blocks[i] = nil // garbage once copied
	}
	return out, nil
}

// ReadFile reads the file at path, at most limit bytes: a regular file
// larger than that is refused before anything is read, anything else (a
// FIFO, a device) is read up to the limit. A regular file is read into
// one buffer of its size: the callers keep what they read (the values of
// a responses file share its bytes), so a buffer grown by doubling would
// keep up to twice the file alive. Its errors are os.Open's (an
// *os.PathError) and ReadAll's.
func ReadFile(path string, limit int64) ([]byte, error) {
	return readFile(path, limit, false)
}

// ReadTextFile is ReadFile for a text file: a NUL byte fails it as it is
// read (a NotTextError).
func ReadTextFile(path string, limit int64) ([]byte, error) {
	return readFile(path, limit, true)
}

func readFile(path string, limit int64, text bool) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if fi, err := f.Stat(); err == nil && fi.Mode().IsRegular() {
		if fi.Size() > limit {
			return nil, &TooLargeError{Limit: limit}
		}
		return readInto(make([]byte, 0, fi.Size()+512), f, limit, text)
	}
	return readStream(f, limit, text) // a FIFO, a device: its size is unknown
}

// readInto appends r to buf until its end, failing past limit bytes, and
// with text at a NUL byte.
func readInto(buf []byte, r io.Reader, limit int64, text bool) ([]byte, error) {
	lr := io.LimitReader(r, limit+1)
	for {
		if len(buf) == cap(buf) {
			buf = append(buf, 0)[:len(buf)] // let append grow it
		}
		n, err := lr.Read(buf[len(buf):cap(buf)])
		if text {
			if i := bytes.IndexByte(buf[len(buf):len(buf)+n], 0); i >= 0 {
				return nil, &NotTextError{Offset: int64(len(buf) + i)}
			}
		}
		buf = buf[:len(buf)+n]
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, err
		}
	}
	if int64(len(buf)) > limit {
		return nil, &TooLargeError{Limit: limit}
	}
	return buf, nil
}
