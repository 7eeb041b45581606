package ensemble

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
)

// interpreted are the extensions that run without the executable bit (SPEC §3).
var interpreted = []string{".py", ".sh", ".js", ".rb"}

// script decodes a script path and returns it with its absolute form,
// relative to the ensemble file's folder. The file must exist and be runnable:
// executable, or with an extension of interpreted.
func (d *decoder) script(f field) (script, path string) {
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
	case info.Mode()&0o111 == 0 && !slices.Contains(interpreted, filepath.Ext(path)):
		d.bad(f, "%q is not executable and has no known extension (.py, .sh, .js, .rb)", script)
	}
	return script, path
}
