package bdd

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestGivenRecordingNamesTheProblem: a recording that does not exist is
// told apart from a file that is not a folder, with the path looked at.
func TestGivenRecordingNamesTheProblem(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "file.yaml"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(dir, "rec"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ dir, want string }{
		{"rec", ""},
		{"file.yaml", `the recording "file.yaml" is not a folder`},
		{"recordings", `the recording "recordings" does not exist (` + filepath.Join(dir, "recordings") + `: a folder relative to the feature file; test --record-missing --live-all makes it)`},
	} {
		s := &Scenario{dir: dir}
		err := s.givenRecording(tc.dir)
		if tc.want == "" && err != nil || tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("%s: %v, want %q", tc.dir, err, tc.want)
		}
	}
}
