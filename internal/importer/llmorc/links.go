package llmorc

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// A project is not trusted to keep to itself: a symbolic link in it may
// lead anywhere (scripts/linkdir -> /etc). No file reached through a link
// that leaves the project is read or copied; each such link is listed as a
// Problem. Links that stay inside are followed.

// within reports whether the resolved path p is dir or below it.
func within(dir, p string) bool {
	rel, err := filepath.Rel(dir, p)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) && !filepath.IsAbs(rel)
}

// realProject is the project folder and its .llm-orc folder, links
// resolved; an error when .llm-orc is a link out of the project.
func realProject(dir, root string) (string, error) {
	project, err := filepath.EvalSymlinks(dir)
	if err != nil {
		return "", &InputError{fmt.Sprintf("%s: %v", dir, err)}
	}
	realRoot, err := filepath.EvalSymlinks(root)
	if err != nil {
		return "", &InputError{fmt.Sprintf("%s: %v", root, err)}
	}
	if !within(project, realRoot) {
		return "", &InputError{fmt.Sprintf("%s: a symbolic link leading out of the project %s: not read", root, dir)}
	}
	return project, nil
}

// escapes is the first symbolic link on the path rel (relative to the
// .llm-orc folder) that leads out of the project or does not resolve (a
// loop), and why; "" when there is none. A path that does not exist has
// none: reading it fails on its own.
func (im *importer) escapes(rel string) (link, why string) {
	parts := strings.Split(filepath.ToSlash(filepath.Clean(rel)), "/")
	cur := im.root
	for i, p := range parts {
		cur = filepath.Join(cur, p)
		st, err := os.Lstat(cur)
		if err != nil {
			return "", ""
		}
		if st.Mode()&fs.ModeSymlink == 0 {
			continue
		}
		link = strings.Join(parts[:i+1], "/")
		real, err := filepath.EvalSymlinks(cur)
		if err != nil {
			return link, "a symbolic link that does not resolve (a loop, or a missing target): not read"
		}
		if !within(im.project, real) {
			return link, "a symbolic link leading out of the project: nothing reached through it is read or copied"
		}
	}
	return "", ""
}

// leaves reports whether rel is reached through a link that leaves the
// project; such a link is listed once.
func (im *importer) leaves(rel string) bool {
	link, why := im.escapes(rel)
	if link == "" {
		return false
	}
	if im.links == nil {
		im.links = map[string]bool{}
	}
	if !im.links[link] {
		im.links[link] = true
		im.problem(link, nil, "%s", why)
	}
	return true
}
