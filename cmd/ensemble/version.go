package main

import (
	"runtime/debug"
	"strings"
)

// stampedVersion is set by make build (-ldflags -X main.stampedVersion=...),
// from git describe: it wins over what the build information says.
var stampedVersion string

// version is what --version prints and traces carry as service.version.
func version() string {
	bi, ok := debug.ReadBuildInfo()
	return versionOf(stampedVersion, bi, ok)
}

// versionOf is, in this order: the version make build stamped; the module
// version the binary was built from (go install ...@v1.2.3, or the
// pseudo-version a build with VCS stamping gives); the VCS revision of a
// local build, cut to 12 digits, "-dirty" when the work tree had changes,
// and the commit's time; or "devel" when the build says none of these.
func versionOf(stamped string, bi *debug.BuildInfo, ok bool) string {
	if stamped = strings.TrimSpace(stamped); stamped != "" {
		return stamped
	}
	if !ok || bi == nil {
		return "devel"
	}
	if v := bi.Main.Version; v != "" && v != "(devel)" {
		return v
	}
	var rev, when string
	dirty := false
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.time":
			when = s.Value
		case "vcs.modified":
			dirty = s.Value == "true"
		}
	}
	if rev == "" {
		return "devel"
	}
	v := rev[:min(12, len(rev))]
	if dirty {
		v += "-dirty"
	}
	if when != "" {
		v += " (" + when + ")"
	}
	return v
}
