package llmorc

import (
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// A project whose symbolic links lead out of it (file links, folder links,
// at any depth, to a parent folder, links to links, a loop) has no file
// reached through them read or copied, and each such link is listed; links
// that stay inside the project are followed.
func TestLinksLeavingTheProjectAreNotFollowed(t *testing.T) {
	t.Parallel()
	tmp := t.TempDir()
	outside := filepath.Join(tmp, "outside")
	write := func(p, s string) {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	link := func(target, p string) {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(target, p); err != nil {
			t.Fatal(err)
		}
	}
	write(filepath.Join(outside, "run.py"), "print('TOPSECRET run')\n")
	write(filepath.Join(outside, "shadow"), "root:TOPSECRET:19000::::::\n")
	write(filepath.Join(outside, "ens.yaml"), "name: stolen\nagents:\n  - name: a\n    script: TOPSECRET.py\n")
	write(filepath.Join(outside, "config.yaml"), "model_profiles:\n  TOPSECRET:\n    model: m\n    provider: ollama\n")
	write(filepath.Join(outside, "p.yaml"), "name: TOPSECRET\nmodel: m\nprovider: ollama\n")

	proj := filepath.Join(tmp, "project")
	lo := filepath.Join(proj, ".llm-orc")
	write(filepath.Join(lo, "scripts", "ok.py"), "print('ok')\n")
	write(filepath.Join(lo, "scripts", "real.py"), "print('real')\n")
	link("real.py", filepath.Join(lo, "scripts", "inside.py"))                          // stays inside: followed
	link(outside, filepath.Join(lo, "scripts", "linkdir"))                              // folder link
	link(filepath.Join(outside, "run.py"), filepath.Join(lo, "scripts", "filelink.py")) // file link
	link(outside, filepath.Join(lo, "scripts", "deep", "a", "b", "link"))               // at depth
	link("../../..", filepath.Join(lo, "scripts", "up"))                                // a parent folder out of the project
	link("chain2.py", filepath.Join(lo, "scripts", "chain.py"))                         // a link to a link out
	link(filepath.Join(outside, "run.py"), filepath.Join(lo, "scripts", "chain2.py"))
	link("loop2.py", filepath.Join(lo, "scripts", "loop1.py")) // a loop
	link("loop1.py", filepath.Join(lo, "scripts", "loop2.py"))
	link(filepath.Join(outside, "shadow"), filepath.Join(lo, "scripts", "sibling.py")) // beside a script
	link(filepath.Join(outside, "ens.yaml"), filepath.Join(lo, "ensembles", "evil.yaml"))
	link(filepath.Join(outside, "config.yaml"), filepath.Join(lo, "config.yaml"))
	link(filepath.Join(outside, "p.yaml"), filepath.Join(lo, "profiles", "p.yaml"))
	var agents strings.Builder
	for i, s := range []string{"ok.py", "inside.py", "linkdir/run.py", "filelink.py", "deep/a/b/link/run.py",
		"up/outside/run.py", "chain.py", "chain2.py", "loop1.py"} {
		agents.WriteString("  - name: a" + string(rune('0'+i)) + "\n    script: scripts/" + s + "\n")
	}
	write(filepath.Join(lo, "ensembles", "main.yaml"), "name: main\nagents:\n"+agents.String())

	out := filepath.Join(tmp, "out")
	res, err := Import(Options{Dir: proj, Out: out})
	if err != nil {
		t.Fatal(err)
	}
	// nothing of the outside folder was read into the output
	err = filepath.WalkDir(out, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		if strings.Contains(string(b), "TOPSECRET") {
			t.Errorf("%s holds a file of outside the project:\n%s", p, b)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range []string{"main.yaml", "scripts/ok.py", "scripts/inside.py", "scripts/real.py"} {
		if !slices.Contains(res.Written, w) {
			t.Errorf("%s not written: %v", w, res.Written)
		}
	}
	// each link is listed, with the reason
	listed := map[string]string{}
	for _, p := range res.Problems {
		listed[p.File] = p.Msg
	}
	for _, l := range []string{"scripts/linkdir", "scripts/filelink.py", "scripts/deep/a/b/link", "scripts/up",
		"scripts/chain.py", "scripts/chain2.py", "scripts/loop1.py", "scripts/sibling.py",
		"ensembles/evil.yaml", "config.yaml", "profiles/p.yaml"} {
		msg, ok := listed[l]
		if !ok {
			t.Errorf("link %s not listed: %v", l, res.Problems)
			continue
		}
		if !strings.Contains(msg, "symbolic link") {
			t.Errorf("%s: reason %q does not name the link", l, msg)
		}
	}
}

// The .llm-orc folder itself being a link out of the project stops the
// import before anything is read.
func TestProjectFolderLinkLeavingIsRefused(t *testing.T) {
	t.Parallel()
	tmp := t.TempDir()
	if err := os.MkdirAll(filepath.Join(tmp, "outside", "ensembles"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(tmp, "project"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(tmp, "outside"), filepath.Join(tmp, "project", ".llm-orc")); err != nil {
		t.Fatal(err)
	}
	_, err := Import(Options{Dir: filepath.Join(tmp, "project"), Out: filepath.Join(tmp, "out")})
	if err == nil || !strings.Contains(err.Error(), "symbolic link") {
		t.Errorf("error %v", err)
	}
}
