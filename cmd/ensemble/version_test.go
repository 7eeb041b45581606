package main

import (
	"runtime/debug"
	"testing"
)

// A build with revision information says which revision, not "devel";
// what make build stamps wins, and a release's module version next.
func TestVersionOf(t *testing.T) {
	t.Parallel()
	vcs := func(main string, settings ...string) *debug.BuildInfo {
		bi := &debug.BuildInfo{Main: debug.Module{Path: "github.com/ensemble-run/ensemble", Version: main}}
		for i := 0; i+1 < len(settings); i += 2 {
			bi.Settings = append(bi.Settings, debug.BuildSetting{Key: settings[i], Value: settings[i+1]})
		}
		return bi
	}
	const rev = "05c67581234567890abcdef05c67581234567890"
	for _, tt := range []struct {
		name    string
		stamped string
		bi      *debug.BuildInfo
		ok      bool
		want    string
	}{
		{"no build information", "", nil, false, "devel"},
		{"nothing known", "", vcs("(devel)"), true, "devel"},
		{"go install of a release", "", vcs("v1.2.3"), true, "v1.2.3"},
		{"revision", "", vcs("(devel)", "vcs.revision", rev, "vcs.time", "2026-11-23T14:02:57Z", "vcs.modified", "false"), true,
			"05c675812345 (2026-11-23T14:02:57Z)"},
		{"changed work tree", "", vcs("(devel)", "vcs.revision", rev, "vcs.modified", "true"), true, "05c675812345-dirty"},
		{"make build", "v1.2.0-3-g05c6758-dirty", vcs("(devel)", "vcs.revision", rev), true, "v1.2.0-3-g05c6758-dirty"},
		{"make build outside git", " ", vcs("(devel)", "vcs.revision", rev), true, "05c675812345"},
	} {
		if got := versionOf(tt.stamped, tt.bi, tt.ok); got != tt.want {
			t.Errorf("%s: version %q, want %q", tt.name, got, tt.want)
		}
	}
}
