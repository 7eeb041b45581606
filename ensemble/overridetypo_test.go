package ensemble_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	. "github.com/ensemble-run/ensemble/ensemble"
)

// A profile given to the command that replaces none of the file's, but is
// a spelling away from one nothing replaces, is warned of: the file's
// profile is used unchanged, against what the command line meant.
func TestMisspeltProfileOverrideIsWarnedOf(t *testing.T) {
	t.Parallel()
	over := filepath.Join(t.TempDir(), "over.yaml")
	if err := os.WriteFile(over, []byte("models:\n  clsh: {provider: ollama, model: x}\n  fast: {provider: ollama, model: y}\n  early: {provider: ollama, model: y}\n  late: {provider: ollama, model: y}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	e := loadOK(t, "uses-profiles.yaml", LoadOptions{Kinds: testKinds, ProfileOverrides: []string{over}})
	want := over + `:2:3: model profile "clsh" replaces none of `
	if len(e.Warnings) != 1 || !strings.Contains(e.Warnings[0].Error(), want) || !strings.Contains(e.Warnings[0].Error(), `did you mean "clash"?`) {
		t.Errorf("warnings %v, want one with %q", e.Warnings, want)
	}
	if e.Models["clash"].Model != "from-file" {
		t.Errorf("clash is %q", e.Models["clash"].Model)
	}
}
