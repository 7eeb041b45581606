package batch

import (
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/ensemble-run/ensemble/internal/readcap"
)

// MaxInputs is the most an inputs file (or standard input) may hold.
const MaxInputs = 1 << 30

// ReadInputs reads and parses the inputs file at path ("-": stdin), up to
// MaxInputs bytes. It returns the inputs and the file's bytes (whose hash a
// saved batch keeps).
func ReadInputs(path string, stdin io.Reader) ([]*Input, []byte, error) {
	var data []byte
	var err error
	name := path
	if path == "-" {
		name = "<stdin>"
		if stdin != nil {
			data, err = readCapped(stdin)
		}
	} else {
		data, err = readFile(path)
	}
	if err != nil {
		return nil, nil, &ReadError{Err: err}
	}
	inputs, err := ParseInputs(name, data)
	return inputs, data, err
}

// readFile reads the file at path, up to MaxInputs bytes.
func readFile(path string) ([]byte, error) {
	return tooMany(readcap.ReadTextFile(path, MaxInputs))
}

// readCapped reads r to its end, up to MaxInputs bytes: an endless stream
// must not exhaust the memory.
func readCapped(r io.Reader) ([]byte, error) {
	return tooMany(readcap.ReadText(r, MaxInputs))
}

// tooMany words readcap's error for inputs.
func tooMany(data []byte, err error) ([]byte, error) {
	_, tooLarge := errors.AsType[*readcap.TooLargeError](err)
	_, notText := errors.AsType[*readcap.NotTextError](err)
	if tooLarge || notText {
		err = fmt.Errorf("the inputs are %w", err)
	}
	return data, err
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

// Inputs reads and parses the saved batch's inputs file again.
func (s *Saved) Inputs() ([]*Input, []byte, error) {
	data, err := readFile(s.Spec.Inputs.Path)
	if err != nil {
		return nil, nil, &ReadError{Err: err}
	}
	inputs, err := ParseInputs(s.Spec.Inputs.Path, data)
	return inputs, data, err
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
