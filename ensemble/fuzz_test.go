package ensemble_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	. "github.com/ensemble-run/ensemble/ensemble"
)

// FuzzLoadBytes checks that no input makes the loader panic, and that it
// returns either an Ensemble or a non-empty *ErrorList of one-line messages.
func FuzzLoadBytes(f *testing.F) {
	seeds, _ := filepath.Glob("testdata/*.yaml")
	seeds = append(seeds, "testdata/iterative-analysis/ensemble.yaml")
	for _, s := range seeds {
		data, err := os.ReadFile(s)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		e, err := LoadBytes("testdata/fuzz.yaml", data, LoadOptions{Kinds: testKinds, LookupEnv: noEnv})
		if (e == nil) == (err == nil) {
			t.Fatalf("Ensemble %v with error %v", e, err)
		}
		if err == nil {
			return
		}
		var list *ErrorList
		if !errors.As(err, &list) || len(*list) == 0 {
			t.Fatalf("error %T %v, want a non-empty *ErrorList", err, err)
		}
		for i, e := range *list {
			if i == MaxErrors && e.Line == 0 && strings.HasPrefix(e.Message, "…and ") {
				continue // the count of the errors left out
			}
			if e.Line < 1 || e.Column < 1 || strings.Contains(e.Message, "\n") {
				t.Errorf("bad error %q", e.Error())
			}
		}
	})
}
