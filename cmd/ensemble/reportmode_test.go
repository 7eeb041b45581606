package main

import (
	"os"
	"path/filepath"
	"testing"
)

// The reports of test (--format FORMAT:FILE, --out) quote the runs'
// outputs and errors: they are created private (0600) as the state file
// and --report are, also over an existing file that was not.
func TestTestReportsArePrivate(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "e.yaml"), "name: z\ninput: hi\nagents:\n  - {name: a, script: s.sh}\n")
	if err := os.WriteFile(filepath.Join(dir, "s.sh"), []byte("#!/bin/sh\necho '\"out\"'\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(dir, "z.feature"), "Feature: z\n  Scenario: runs\n    Given the ensemble \"e.yaml\"\n    When the ensemble runs\n    Then the run has no errors\n")
	reports := []string{"r.xml", "c.json", "m.md", "p.txt", "out.txt"}
	if err := os.WriteFile(filepath.Join(dir, "r.xml"), []byte("old"), 0o644); err != nil {
		t.Fatal(err)
	}
	p := func(name string) string { return filepath.Join(dir, name) }
	o := ensembleEnv(t, map[string]string{}, "test", "--format", "junit:"+p("r.xml")+",cucumber:"+p("c.json")+",markdown:"+p("m.md")+",pretty:"+p("p.txt"),
		"--out", p("out.txt"), dir)
	if o.code != 0 {
		t.Fatalf("test: exit %d\n%s%s", o.code, o.stdout, o.stderr)
	}
	for _, name := range reports {
		fi, err := os.Stat(p(name))
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode().Perm() != 0o600 {
			t.Errorf("%s: mode %v, want 0600", name, fi.Mode().Perm())
		}
	}
}
