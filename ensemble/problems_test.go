package ensemble_test

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/ensemble-run/ensemble/ensemble"
)

// Problems lists what validate --output json prints of a file.
func TestProblems(t *testing.T) {
	t.Parallel()
	warned := &ensemble.Ensemble{Warnings: []*ensemble.Error{{File: "a.yaml", Line: 3, Column: 5, Message: "a join"}}}
	list := &ensemble.ErrorList{{File: "b.yaml", Line: 1, Column: 2, Message: "bad"}, {File: "b.yaml", Line: 4, Column: 1, Message: "worse"}}
	for _, tc := range []struct {
		name   string
		e      *ensemble.Ensemble
		err    error
		strict bool
		want   []ensemble.Problem
	}{
		{"warnings", warned, nil, false, []ensemble.Problem{{"a.yaml", 3, 5, "warning", "a join"}}},
		{"warnings, strict", warned, nil, true, []ensemble.Problem{{"a.yaml", 3, 5, "error", "a join"}}},
		{"errors", nil, list, false, []ensemble.Problem{{"b.yaml", 1, 2, "error", "bad"}, {"b.yaml", 4, 1, "error", "worse"}}},
		{"another error", nil, errors.New("cannot read"), false, []ensemble.Problem{{File: "c.yaml", Severity: "error", Message: "cannot read"}}},
		{"nothing", &ensemble.Ensemble{}, nil, true, nil},
	} {
		if got := ensemble.Problems("c.yaml", tc.e, tc.err, tc.strict); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s: %+v, want %+v", tc.name, got, tc.want)
		}
	}
}

// Expand keeps files and "-", and turns a folder into its top-level
// ensemble files; an empty folder is an error.
func TestExpandPaths(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	for name, body := range map[string]string{
		"parent.yaml":         "name: p\nagents:\n  - name: c\n    ensemble: child.yaml\n",
		"child.yaml":          "name: c\nagents:\n  - name: x\n    script: x.sh\n",
		"responses.yaml":      "x: [1]\n",
		"testdata/other.yaml": "name: o\nagents: []\n",
	} {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	got, err := ensemble.Expand([]string{"-", "missing.yaml", dir})
	if want := []string{"-", "missing.yaml", filepath.Join(dir, "parent.yaml")}; err != nil || !reflect.DeepEqual(got, want) {
		t.Errorf("%v, %v; want %v", got, err, want)
	}
	empty := t.TempDir()
	if _, err := ensemble.Expand([]string{empty}); err == nil {
		t.Error("an empty folder expanded to nothing, without an error")
	}
}
