package bdd

import "os"

// CreatePrivate creates (or truncates) the report file at path with mode
// 0600, as the state file and --report are: a test report quotes the runs'
// outputs and errors. An existing plain file is made private too.
func CreatePrivate(path string) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return nil, err
	}
	// Only a plain file: a device (/dev/null) or a pipe is not ours to
	// make private.
	if fi, err := f.Stat(); err == nil && fi.Mode().IsRegular() {
		if err := f.Chmod(0o600); err != nil {
			f.Close()
			return nil, err
		}
	}
	return f, nil
}
