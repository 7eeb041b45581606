package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// The hint of a run that waits for an answer names its run in a state
// database, however many runs the database holds when it is printed: by
// the time it is used, another run may be there. On stderr and in the
// --report. A JSON state file holds one run: no --run-id.
func TestWaitingRunHintNamesItsRun(t *testing.T) {
	t.Parallel()
	file := waitEnsemble(t, "suspend", "reviewer")
	for _, tc := range []struct {
		name, state string
		extra       []string
		want        string // a regexp
	}{
		{"database, --run-id", "runs.db", []string{"--run-id", "nightly"}, `resume \S+runs\.db --run-id nightly --answer`},
		{"database, a new id", "runs.db", nil, `resume \S+runs\.db --run-id [-0-9a-f]+ --answer`},
		{"JSON state file", "run.json", nil, `resume \S+run\.json --answer`}, // resumed from an export
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			report := filepath.Join(dir, "report.md")
			state := filepath.Join(dir, tc.state)
			args := append([]string{"run", file, "--state", state, "--output", "text", "--report", report}, tc.extra...)
			if strings.HasSuffix(tc.state, ".json") {
				db := filepath.Join(dir, "runs.db")
				if o := ensembleCmd(t, "", "run", file, "--state", db); o.code != 5 {
					t.Fatalf("exit %d\n%s", o.code, o.stderr)
				}
				o := ensembleCmd(t, "", "state", "export", db)
				if err := os.WriteFile(state, []byte(o.stdout), 0o644); o.code != 0 || err != nil {
					t.Fatalf("export: exit %d %v\n%s", o.code, err, o.stderr)
				}
				args = []string{"resume", state, "--output", "text", "--report", report}
			}
			o := ensembleCmd(t, "", args...)
			want := regexp.MustCompile("answer with: ensemble " + tc.want + ` reviewer=`)
			if o.code != 5 || !want.MatchString(o.stderr) {
				t.Fatalf("exit %d, stderr lacks %s:\n%s", o.code, want, o.stderr)
			}
			md, err := os.ReadFile(report)
			if err != nil {
				t.Fatal(err)
			}
			if want := regexp.MustCompile("Answer with `ensemble " + tc.want + " AGENT=TEXT`"); !want.Match(md) {
				t.Errorf("report lacks %s:\n%s", want, md)
			}
			if strings.Contains(o.stderr, "--run-id") != strings.Contains(tc.want, "--run-id") {
				t.Errorf("stderr: %s", o.stderr)
			}
		})
	}
}
