// Package skeleton is the ensemble `ensemble init` writes: a script agent,
// an LLM agent that depends on it, its injected replies and a feature file.
// It is a working ensemble in the repository too (`ensemble test` runs
// files/).
package skeleton

import (
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

//go:embed files
var files embed.FS

// Files lists the skeleton's files, relative to its folder, with slashes.
func Files() ([]string, error) {
	var list []string
	err := fs.WalkDir(files, "files", func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			list = append(list, strings.TrimPrefix(p, "files/"))
		}
		return err
	})
	return list, err
}

// ExistsError names the files of the skeleton that dir has already.
type ExistsError struct{ Paths []string }

func (e *ExistsError) Error() string {
	return "these files exist, and init does not overwrite files:\n  " + strings.Join(e.Paths, "\n  ")
}

// Check refuses a dir the skeleton cannot be written to without
// overwriting something: a file, or a folder that has one of the
// skeleton's files (*ExistsError).
func Check(dir string) error {
	list, err := Files()
	if err != nil {
		return err
	}
	if fi, err := os.Stat(dir); err == nil && !fi.IsDir() {
		return fmt.Errorf("%s is a file, not a folder: name a folder (a new one is made)", dir)
	}
	var exist []string
	for _, f := range list {
		p := filepath.Join(dir, filepath.FromSlash(f))
		if _, err := os.Lstat(p); err == nil {
			exist = append(exist, p)
		} else if !errors.Is(err, fs.ErrNotExist) {
			return err
		}
	}
	if len(exist) > 0 {
		return &ExistsError{Paths: exist}
	}
	return nil
}

// Write writes the skeleton into dir (made when it does not exist), once
// Check passes, and returns the paths it created, in order. A file created
// meanwhile fails the write: nothing is overwritten.
func Write(dir string) ([]string, error) {
	if err := Check(dir); err != nil {
		return nil, err
	}
	list, err := Files()
	if err != nil {
		return nil, err
	}
	var created []string
	for _, f := range list {
		data, err := files.ReadFile("files/" + f)
		if err != nil {
			return created, err
		}
		p := filepath.Join(dir, filepath.FromSlash(f))
		mode := os.FileMode(0o644)
		if strings.HasPrefix(f, "scripts/") {
			mode = 0o755
		}
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return created, err
		}
		// O_EXCL: a file created since the check is not overwritten either.
		fh, err := os.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_EXCL, mode)
		if err != nil {
			return created, err
		}
		_, err = fh.Write(data)
		if cerr := fh.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return created, err
		}
		created = append(created, p)
	}
	return created, nil
}
