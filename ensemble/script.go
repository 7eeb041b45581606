package ensemble

import (
	"bytes"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// interpreted are the extensions that run without the executable bit (docs/semantics.md#script-agents).
var interpreted = []string{".py", ".sh", ".js", ".rb"}

// script decodes a script path and returns it with its absolute form,
// relative to the ensemble file's folder. The file must exist and be runnable
// the way the script runner starts it: an executable file with a "#!" line
// runs through it, then a file with an extension of interpreted runs through
// that interpreter, then an executable file must be a binary. The file must
// be under the ensemble file's folder, symbolic links resolved, unless
// allowOutside: a script gets the run's data on stdin, and /bin/sh would run
// it as shell code.
func (d *decoder) script(f field, allowOutside bool) (script, path string) {
	script = d.str(f)
	if script == "" {
		return "", ""
	}
	path = script
	if !filepath.IsAbs(path) {
		path = filepath.Join(d.dir, path)
	}
	info, err := os.Stat(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		d.bad(f, "%q does not exist", script)
	case err != nil:
		d.bad(f, "%q cannot be read: %v", script, errors.Unwrap(err))
	case info.IsDir():
		d.bad(f, "%q is a folder, not a file", script)
	case info.Mode()&0o111 == 0 && !slices.Contains(interpreted, strings.ToLower(filepath.Ext(path))):
		d.bad(f, "%q is not executable and has no known extension (.py, .sh, .js, .rb)", script)
	case !allowOutside && !d.inside(path):
		d.bad(f, "%q is outside %s: a script gets the run's data on stdin; move it under the folder, or set allow_outside: true if it is meant to run from there", script, d.boundary())
	case info.Mode()&0o111 != 0:
		d.executable(f, script, path)
	}
	return script, path
}

// root is the folder that bounds the files a load reads for its agents
// (scripts, output schemas, child ensembles): the folder of the ensemble
// file the user ran, for its children too, so that a child in
// ensembles/ may use the project's scripts/. A child let in from outside
// by allow_outside is bounded by its own folder.
func (d *decoder) root() string {
	if d.top != "" {
		return d.top
	}
	return d.dir
}

// boundary names root in a message.
func (d *decoder) boundary() string {
	if d.root() == d.dir {
		return "the ensemble file's folder " + d.dir
	}
	return "the folder of the ensemble file run, " + d.root()
}

// inside reports whether path, symbolic links resolved, is under root
// (also resolved).
func (d *decoder) inside(path string) bool {
	dir, err := filepath.EvalSymlinks(d.root())
	if err != nil {
		return false
	}
	real, err := filepath.EvalSymlinks(path)
	if err == nil {
		real, err = filepath.Abs(real)
	}
	if err != nil {
		return false
	}
	rel, err := filepath.Rel(dir, real)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator))
}

// executable checks the start of an executable script: a "#!" line must not
// end in a carriage return (the system would look for an interpreter named
// "python3\r"), and a file without one must be a binary unless an extension
// of interpreted picks its interpreter.
func (d *decoder) executable(f field, script, path string) {
	file, err := os.Open(path)
	if err != nil {
		d.bad(f, "%q cannot be read: %v", script, errors.Unwrap(err))
		return
	}
	defer file.Close()
	head := make([]byte, 256) // as much of a #! line as Linux reads
	n, _ := io.ReadFull(file, head)
	head = head[:n]
	line, _, _ := bytes.Cut(head, []byte("\n"))
	switch {
	case bytes.HasPrefix(head, []byte("#!")):
		if bytes.HasSuffix(line, []byte("\r")) {
			d.bad(f, "%q has Windows line endings (CRLF): its #! line ends in a carriage return, so it cannot start; convert it with dos2unix or sed -i 's/\\r$//'", script)
		}
	case slices.Contains(interpreted, strings.ToLower(filepath.Ext(path))):
	case !isBinary(head):
		d.bad(f, "%q is executable but has no #! line, no known extension (.py, .sh, .js, .rb) and is not a binary: add a first line such as #!/bin/sh", script)
	}
}

// isBinary reports whether head starts an executable binary: ELF or Mach-O.
func isBinary(head []byte) bool {
	for _, magic := range []string{"\x7fELF", "\xfe\xed\xfa\xce", "\xfe\xed\xfa\xcf", "\xce\xfa\xed\xfe", "\xcf\xfa\xed\xfe", "\xca\xfe\xba\xbe"} {
		if bytes.HasPrefix(head, []byte(magic)) {
			return true
		}
	}
	return false
}
