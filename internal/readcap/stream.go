package readcap

import (
	"bytes"
	"io"
	"os"
)

// Reader is a stream read in pieces rather than whole (a JSON Lines file,
// line by line), under the same limit as ReadAll: a read past limit bytes
// fails with a TooLargeError, and with text a NUL byte fails it with a
// NotTextError, as it is read. What it read is not kept: the memory is
// the caller's, not the stream's size.
type Reader struct {
	r     io.Reader
	limit int64
	text  bool
	n     int64 // bytes read so far
	err   error // sticky
}

// NewReader reads r, at most limit bytes; with text, no NUL byte.
func NewReader(r io.Reader, limit int64, text bool) *Reader {
	return &Reader{r: r, limit: limit, text: text}
}

// Read reads r, failing past the limit (or at a NUL byte).
func (l *Reader) Read(p []byte) (int, error) {
	if l.err != nil {
		return 0, l.err
	}
	if left := l.limit + 1 - l.n; int64(len(p)) > left {
		p = p[:left] // one byte past the limit is enough to tell
	}
	n, err := l.r.Read(p)
	if l.text {
		if i := bytes.IndexByte(p[:n], 0); i >= 0 {
			l.err = &NotTextError{Offset: l.n + int64(i)}
			return 0, l.err
		}
	}
	l.n += int64(n)
	if l.n > l.limit {
		l.err = &TooLargeError{Limit: l.limit}
		return 0, l.err
	}
	return n, err
}

// File is a file opened to be read in pieces (a Reader), at most limit
// bytes: a regular file larger than that is refused before a byte is
// read, as ReadFile does. Close it.
type File struct {
	*Reader
	f *os.File
}

// Close closes the file.
func (f *File) Close() error { return f.f.Close() }

// Open opens the file at path for a Reader of at most limit bytes; with
// text, no NUL byte. Its errors are os.Open's (an *os.PathError) and a
// TooLargeError for a regular file over the limit.
func Open(path string, limit int64, text bool) (*File, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	if fi, err := f.Stat(); err == nil && fi.Mode().IsRegular() && fi.Size() > limit {
		f.Close()
		return nil, &TooLargeError{Limit: limit}
	}
	return &File{Reader: NewReader(f, limit, text), f: f}, nil
}
