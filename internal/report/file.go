package report

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

// File is a report file written atomically (--report): the report goes to
// a temporary file beside it, created at once so that a bad path fails
// before the run, and renamed over the path by Commit when the run ends.
// Until then nothing is written at the path: a run that is refused or
// killed leaves an earlier report there as it was.
type File struct {
	path string
	tmp  *os.File
	// direct: tmp is the path itself, a device, a pipe or a symbolic link
	// (/dev/null, /dev/stdout), written as it is: renamed over, it would be
	// replaced by a regular file (/dev/null so for the whole machine, when
	// run as root).
	direct bool
}

// CreateFile creates the report file at path, with mode 0600, as the state
// file is: it holds the same conversations. Errors name path, not the
// temporary file.
func CreateFile(path string) (*File, error) {
	if fi, err := os.Stat(path); err == nil && fi.IsDir() {
		return nil, errors.New("it is a directory")
	} else if err == nil && (!fi.Mode().IsRegular() || isLink(path)) {
		// A device, a pipe, or a link (/dev/stdout): written through, as
		// it is.
		f, err := os.OpenFile(path, os.O_WRONLY|os.O_TRUNC, 0)
		if err != nil {
			return nil, fmt.Errorf("cannot open it: %w", pathless(err))
		}
		return &File{path: path, tmp: f, direct: true}, nil
	}
	dir, base := filepath.Split(path)
	if dir == "" {
		dir = "."
	}
	tmp, err := os.CreateTemp(dir, "."+base+".tmp-*")
	if err != nil {
		return nil, fmt.Errorf("cannot create it: %w", pathless(err))
	}
	return &File{path: path, tmp: tmp}, nil
}

// pathless is err without the path of an *os.PathError or *os.LinkError.
func pathless(err error) error {
	var pe *os.PathError
	var le *os.LinkError
	switch {
	case errors.As(err, &pe):
		return pe.Err
	case errors.As(err, &le):
		return le.Err
	}
	return err
}

// Write writes to the report.
func (r *File) Write(p []byte) (int, error) { return r.tmp.Write(p) }

// Commit puts the written report in place; err is the error of writing it.
func (r *File) Commit(err error) error {
	if cerr := r.tmp.Close(); err == nil {
		err = cerr
	}
	if r.direct {
		return pathless(err)
	}
	if err == nil {
		err = os.Rename(r.tmp.Name(), r.path)
	}
	if err != nil {
		os.Remove(r.tmp.Name())
		return pathless(err)
	}
	return nil
}

// Discard drops the report: the path keeps what it had.
func (r *File) Discard() {
	r.tmp.Close()
	if !r.direct {
		os.Remove(r.tmp.Name())
	}
}

func isLink(path string) bool {
	fi, err := os.Lstat(path)
	return err == nil && fi.Mode()&os.ModeSymlink != 0
}
