package report

import (
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ensemble-run/ensemble/ensemble"
)

// --report names a file to write when the run ends: one that holds
// something else than an earlier report (the ensemble file itself, the
// state database) is refused before the run, and left as it was.
func TestReportRefusesToOverwriteOtherFiles(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	e := &ensemble.Ensemble{Name: "r"}
	for name, c := range map[string]struct {
		content string
		ok      bool
	}{
		"ensemble.yaml": {"name: r\nagents: []\n", false},
		"runs.db":       {"SQLite format 3\x00...", false},
		"old.md":        {"# Run report: r\n\nearlier\n", true},
		"empty.md":      {"", true},
		"new.md":        {"-", true}, // not created
	} {
		path := filepath.Join(dir, name)
		if c.content != "-" {
			if err := os.WriteFile(path, []byte(c.content), 0o600); err != nil {
				t.Fatal(err)
			}
		}
		_, err := NewView(e, ViewOptions{Output: "json", Out: io.Discard, Err: io.Discard, Report: path})
		if (err == nil) != c.ok {
			t.Errorf("%s: err %v, want ok %v", name, err, c.ok)
		}
		if !c.ok {
			if !strings.Contains(err.Error(), "refusing to overwrite it") {
				t.Errorf("%s: %v", name, err)
			}
			if b, _ := os.ReadFile(path); string(b) != c.content {
				t.Errorf("%s changed: %q", name, b)
			}
		}
	}
}
