package ensemble_test

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	. "github.com/ensemble-run/ensemble/ensemble"
)

// A file of many mistakes reports the first MaxErrors, then how many more.
func TestTooManyErrors(t *testing.T) {
	t.Parallel()
	var b strings.Builder
	for i := range MaxErrors + 50 {
		fmt.Fprintf(&b, "unknown%d: 1\n", i)
	}
	file := filepath.Join("testdata", "many.yaml")
	_, err := LoadBytes(file, []byte(b.String()), LoadOptions{Kinds: testKinds, LookupEnv: noEnv})
	list, ok := err.(*ErrorList)
	if !ok || len(*list) != MaxErrors+1 {
		t.Fatalf("got %d errors, want %d: %v", len(*list), MaxErrors+1, err)
	}
	if got := (*list)[0].Error(); got != file+`:1:1: unknown top-level key "unknown0"` {
		t.Errorf("first error %q", got)
	}
	// 50 more unknown keys, then name and agents are required.
	if got, want := (*list)[MaxErrors].Error(), file+": …and 52 more errors"; got != want {
		t.Errorf("last error %q, want %q", got, want)
	}
}

func TestFileTooLarge(t *testing.T) {
	t.Parallel()
	want := ": the file is larger than 16 MiB, the limit for the YAML files read whole (ensemble, profiles, answers)"
	big := append([]byte("name: big\n# "), bytes.Repeat([]byte("x"), MaxFileSize)...)
	path := filepath.Join(t.TempDir(), "big.yaml")
	if err := os.WriteFile(path, big, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(path, LoadOptions{Kinds: testKinds, LookupEnv: noEnv}); err == nil || err.Error() != path+want {
		t.Errorf("Load: %v", err)
	}
	if _, err := LoadBytes("stdin.yaml", big, LoadOptions{Kinds: testKinds, LookupEnv: noEnv}); err == nil || err.Error() != "stdin.yaml"+want {
		t.Errorf("LoadBytes: %v", err)
	}
	if _, err := LoadProfiles(path, noEnv); err == nil || err.Error() != path+want {
		t.Errorf("LoadProfiles: %v", err)
	}
}
