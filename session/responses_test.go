package session_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ensemble-run/ensemble/session"
)

// A program outside the module reads injected responses through session:
// a file checked against the ensemble, with an unknown agent named.
func TestLoadResponsesChecksAgents(t *testing.T) {
	t.Parallel()
	e, err := session.Load("testdata/release.yaml", nil, session.LoadOptions{LookupEnv: noEnv})
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	for _, tt := range []struct{ name, body, wantErr string }{
		{"known", "writer: [draft]\n", ""},
		{"unknown", "writr: [draft]\n", `unknown agent "writr" in responses; did you mean "writer"?`},
	} {
		path := filepath.Join(dir, tt.name+".yaml")
		if err := os.WriteFile(path, []byte(tt.body), 0o600); err != nil {
			t.Fatal(err)
		}
		r, err := session.LoadResponses(path, e)
		switch {
		case tt.wantErr == "" && (err != nil || r.Entry("writer") == nil):
			t.Errorf("%s: %v, entry %v", tt.name, err, r)
		case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
			t.Errorf("%s: err %v, want %q", tt.name, err, tt.wantErr)
		}
	}
}
