package report

import (
	"bytes"
	"errors"
	"io"
	"os"
)

// reportHeader starts every run report (markdown.go).
const reportHeader = "# Run report"

// checkOverwrite refuses a --report path that holds a file other than an
// earlier run report: `--report ensemble.yaml`, `--report runs.db`, a
// script, a note. Written over when the run ends, it would be lost. An
// empty file and a missing one are taken.
func checkOverwrite(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return nil // missing (or unreadable: CreateFile says why it cannot be written)
	}
	defer f.Close()
	if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() || fi.Size() == 0 {
		return nil
	}
	head := make([]byte, len(reportHeader))
	if _, err := io.ReadFull(f, head); err == nil && bytes.Equal(head, []byte(reportHeader)) {
		return nil
	}
	return errors.New("it holds a file that is no run report (one starts with \"" + reportHeader + "\"); refusing to overwrite it: name a new file, or remove this one")
}
