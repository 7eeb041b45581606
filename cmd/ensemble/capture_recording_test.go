package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// copyFile copies src to dst.
func copyFile(t *testing.T, src, dst string) {
	t.Helper()
	b, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(dst, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// test capture copies, of the folder the run names as its recording, the
// files of the run's agents alone, each checked as a recording: not the
// folder's other files, not a file reached through a link out of it.
func TestCaptureCopiesTheRunsRecordingFilesOnly(t *testing.T) {
	t.Parallel()
	recorded := filepath.Join("..", "..", "examples", "local-ollama", "recording", "inventory_assistant.yaml")
	cases := []struct {
		name string
		// prepare changes the recording folder after the run
		prepare  func(t *testing.T, rec, outside string)
		refused  string // "": the capture succeeds
		copied   []string
		notThere []string
		note     string // on stderr
	}{
		{"other files are left", func(t *testing.T, rec, outside string) {
			if err := os.WriteFile(filepath.Join(rec, "notes.yaml"), []byte("secret: TOPSECRET\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			// a recording, but of no agent of the run
			copyFile(t, recorded, filepath.Join(rec, "someone_else.yaml"))
			if err := os.Symlink(filepath.Join(outside, "secret.yaml"), filepath.Join(rec, "linked.yaml")); err != nil {
				t.Fatal(err)
			}
		}, "", []string{"inventory_assistant.yaml"}, []string{"notes.yaml", "someone_else.yaml", "linked.yaml"},
			"3 file(s) of no agent of this run, not copied: linked.yaml, notes.yaml, someone_else.yaml"},
		{"an agent's file that is no recording", func(t *testing.T, rec, outside string) {
			if err := os.WriteFile(filepath.Join(rec, "inventory_assistant.yaml"), []byte("secret: TOPSECRET\n"), 0o644); err != nil {
				t.Fatal(err)
			}
		}, "inventory_assistant.yaml", nil, nil, ""},
		{"an agent's file linked out of the folder", func(t *testing.T, rec, outside string) {
			copyFile(t, recorded, filepath.Join(outside, "inventory_assistant.yaml"))
			p := filepath.Join(rec, "inventory_assistant.yaml")
			if err := os.Remove(p); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(filepath.Join(outside, "inventory_assistant.yaml"), p); err != nil {
				t.Fatal(err)
			}
		}, "symbolic link", nil, nil, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			rec, outside := filepath.Join(dir, "rec"), filepath.Join(dir, "outside")
			for _, d := range []string{rec, outside} {
				if err := os.MkdirAll(d, 0o755); err != nil {
					t.Fatal(err)
				}
			}
			if err := os.WriteFile(filepath.Join(outside, "secret.yaml"), []byte("secret: TOPSECRET\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			copyFile(t, recorded, filepath.Join(rec, "inventory_assistant.yaml"))
			db := filepath.Join(dir, "runs.db")
			if o := ensembleCmd(t, "", "run", filepath.Join("..", "..", "examples", "local-ollama", "ensemble.yaml"),
				"--state", db, "--no-input", "--replay", rec); o.code != 0 {
				t.Fatalf("run: exit %d\n%s", o.code, o.stderr)
			}
			c.prepare(t, rec, outside)
			out := filepath.Join(dir, "captured")
			o := ensembleCmd(t, "", "test", "capture", db, "--out", out)
			if c.refused != "" {
				if o.code == 0 || !strings.Contains(o.stderr, c.refused) {
					t.Errorf("test capture: exit %d, want a refusal naming %q\n%s%s", o.code, c.refused, o.stdout, o.stderr)
				}
			} else if o.code != 0 {
				t.Fatalf("test capture: exit %d\n%s%s", o.code, o.stdout, o.stderr)
			}
			if !strings.Contains(o.stderr, c.note) {
				t.Errorf("stderr lacks %q:\n%s", c.note, o.stderr)
			}
			files := map[string]string{}
			if _, err := os.Stat(out); err == nil {
				files = readDir(t, out)
			}
			for p, s := range files {
				if strings.Contains(s, "TOPSECRET") {
					t.Errorf("%s holds a file the run did not record", p)
				}
			}
			for _, w := range c.copied {
				if _, ok := fileEnding(files, ".recording/"+w); !ok {
					t.Errorf("%s was not copied: %v", w, files)
				}
			}
			for _, w := range c.notThere {
				if p, ok := fileEnding(files, ".recording/"+w); ok {
					t.Errorf("%s was copied", p)
				}
			}
		})
	}
}
