package batch

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/ensemble-run/ensemble/internal/readcap"
)

// MaxInputs is the most an inputs file (or standard input) may hold.
const MaxInputs = 1 << 30

// ReadInputs reads and parses the inputs file at path ("-": stdin), up to
// MaxInputs bytes, line by line: the memory it takes is the inputs', not
// the file's size besides. It returns the inputs and the SHA-256 of the
// file's bytes, in hex (which a saved batch keeps).
func ReadInputs(path string, stdin io.Reader) ([]*Input, string, error) {
	if path == "-" {
		if stdin == nil {
			stdin = strings.NewReader("")
		}
		return readInputs("<stdin>", readcap.NewReader(stdin, MaxInputs, true))
	}
	return openInputs(path, path)
}

// openInputs reads the inputs file at path, named name in messages.
func openInputs(path, name string) ([]*Input, string, error) {
	f, err := readcap.Open(path, MaxInputs, true)
	if err != nil {
		return nil, "", &ReadError{Err: tooMany(err)}
	}
	defer f.Close()
	return readInputs(name, f)
}

// readInputs parses the inputs read from r, hashing its bytes as they
// are read. A read error (the limit, a NUL byte) is a *ReadError.
func readInputs(name string, r io.Reader) ([]*Input, string, error) {
	h := sha256.New()
	src := &readErr{r: io.TeeReader(r, h)}
	inputs, err := parseInputs(name, src)
	if src.err != nil {
		return nil, "", &ReadError{Err: tooMany(src.err)}
	}
	if err != nil {
		return nil, "", err
	}
	return inputs, hex.EncodeToString(h.Sum(nil)), nil
}

// readErr notes the error of its reader other than io.EOF: a read error,
// told from a problem of the lines.
type readErr struct {
	r   io.Reader
	err error
}

func (r *readErr) Read(p []byte) (int, error) {
	n, err := r.r.Read(p)
	if err != nil && err != io.EOF {
		r.err = err
	}
	return n, err
}

// tooMany words readcap's error for inputs.
func tooMany(err error) error {
	_, tooLarge := errors.AsType[*readcap.TooLargeError](err)
	_, notText := errors.AsType[*readcap.NotTextError](err)
	if tooLarge || notText {
		err = fmt.Errorf("the inputs are %w", err)
	}
	return err
}

// ReadError is an inputs file that cannot be read.
type ReadError struct{ Err error }

func (e *ReadError) Error() string { return e.Err.Error() }
func (e *ReadError) Unwrap() error { return e.Err }

// OpenOutput opens where a batch writes its lines: stdout for "-", else
// the file at path, created (mode 0600: it holds the runs' conversations)
// or truncated, or with keep (a resumed batch's) opened for appending.
// redact wraps the file. close closes it.
func OpenOutput(path string, stdout io.Writer, keep bool, redact func(io.Writer) io.Writer) (w io.Writer, close func() error, err error) {
	if path == "-" {
		return stdout, func() error { return nil }, nil
	}
	flags := os.O_WRONLY | os.O_CREATE | os.O_TRUNC
	if keep {
		flags = os.O_WRONLY | os.O_CREATE | os.O_APPEND
	}
	file, err := os.OpenFile(path, flags, 0o600)
	if err != nil {
		return nil, nil, err
	}
	return redact(file), file.Close, nil
}

// Inputs reads and parses the saved batch's inputs file again, and
// returns them with the SHA-256 of the file, in hex.
func (s *Saved) Inputs() ([]*Input, string, error) {
	return openInputs(s.Spec.Inputs.Path, s.Spec.Inputs.Path)
}

// Reads are the files the saved batch reads (its ensemble, inputs,
// responses and profiles, and the state database at statePath), which its
// output must not be (CheckOutput).
func (s *Saved) Reads(statePath string) []File {
	spec := s.Spec
	read := []File{{"the batch's ensemble file", spec.Ensemble.Path}, {"the batch's inputs file", spec.Inputs.Path},
		{"the state database", statePath}}
	if spec.Responses != nil {
		read = append(read, File{"the batch's responses file", spec.Responses.Path})
	}
	for _, p := range spec.Profiles {
		read = append(read, File{"a profiles file of the batch", p})
	}
	return read
}
