package ensemble

import (
	"fmt"
	"maps"
	"slices"
)

// misspeltOverrides warns of a profile of a profiles file given to the
// command (--profiles) that replaces none of the file's own profiles but
// is a spelling away from one that nothing replaces: --profiles local.yaml
// with "wrter" meant to point the file's "writer" at another model, which
// then silently keeps the file's.
func (d *decoder) misspeltOverrides(own map[string]*ModelProfile) []*Error {
	var free []string // the file's profiles that nothing replaces
	for name := range own {
		if d.overrides[name] == nil {
			free = append(free, name)
		}
	}
	var out []*Error
	for _, name := range slices.Sorted(maps.Keys(d.overrides)) {
		if own[name] != nil {
			continue
		}
		if meant := closest(name, free); meant != "" {
			p := d.overrides[name]
			out = append(out, &Error{File: p.File, Line: p.Pos.Line, Column: p.Pos.Column, Message: fmt.Sprintf(
				"model profile %q replaces none of %s's; did you mean %q? (the file's %q is used unchanged)", name, d.file, meant, meant)})
		}
	}
	return out
}
