package bdd

import (
	"path/filepath"
	"testing"
)

// Scenarios that share a name are numbered among all the scenarios of
// their file, not among those --tags or :LINE selected: the name is a
// scenario's identity in a baseline, which must not change with the
// selection.
func TestPlanNumbersNamesWhateverTheSelection(t *testing.T) {
	t.Parallel()
	feature := `Feature: twins
  Scenario: same
    Given the ensemble "e.yaml"

  @second
  Scenario: same
    Given the ensemble "e.yaml"
`
	dir := writeTempFiles(t, map[string]string{"a.feature": feature})
	file := filepath.Join(dir, "a.feature")
	for _, tc := range []struct {
		name  string
		files []string
		tags  string
	}{
		{"all", []string{file}, ""},
		{"tags", []string{file}, "@second"},
		{"line", []string{file + ":6"}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			parsed, _, err := checkSyntax(tc.files)
			if err != nil {
				t.Fatal(err)
			}
			pl, err := planScenarios(parsed, tc.tags, 1, 1)
			if err != nil {
				t.Fatal(err)
			}
			last := pl.scenarios[len(pl.scenarios)-1]
			if last.name != "same #2" || last.line != 6 {
				t.Errorf("the second scenario is %q at line %d, want \"same #2\" at line 6", last.name, last.line)
			}
		})
	}
}
