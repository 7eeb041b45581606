package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// programName is how the user runs this binary, started as arg0, for the
// commands the messages suggest (resume, init's first steps): arg0 itself
// when it is a bare name (the shell found it on the PATH), the bare name
// when the PATH finds this same binary by it (go install), and otherwise
// the path it was started by (bin/ensemble after make build), which works
// from where the user is. The PATH is read as the process was given it.
func programName(arg0 string) string {
	if arg0 == "" {
		return "ensemble"
	}
	if !strings.ContainsRune(arg0, os.PathSeparator) {
		return shellQuote(arg0)
	}
	base := filepath.Base(arg0)
	if found, err := exec.LookPath(base); err == nil {
		a, errA := os.Stat(found)
		b, errB := os.Stat(arg0)
		if errA == nil && errB == nil && os.SameFile(a, b) {
			return shellQuote(base)
		}
	}
	return shellQuote(arg0)
}
