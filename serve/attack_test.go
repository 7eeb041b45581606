package serve_test

// Requests an attacker holding the token (or not) may send: each is
// refused, and reaches nothing it names outside the server's runs.

import (
	"os"
	"path/filepath"
	"testing"
)

// An answer's run id comes from the URL, where %2F is a slash: it must
// name a run of the database before it names a file of the journal (the
// run's RUN.json, at STATE.serve/ID.json).
func TestAnswerIDNamesNoJournalFile(t *testing.T) {
	t.Parallel()
	dir := ensembles(t)
	// what STATE.serve/../planted.json reads: a "cancelled" run
	if err := os.WriteFile(filepath.Join(dir, "planted.json"), []byte(`{"cancelled": true}`), 0o600); err != nil {
		t.Fatal(err)
	}
	s := startServer(t, dir, nil)
	for _, id := range []string{"..%2Fplanted", "..%2F..%2F" + filepath.Base(dir) + "%2Fplanted", "a%00b", "nope"} {
		code, b, _ := s.do(t, "POST", "/v1/runs/"+id+"/answers", map[string]any{"approver": "yes"})
		if code != 404 || errorCode(t, b) != "not_found" {
			t.Errorf("%s: %d %s, want 404 not_found", id, code, b)
		}
	}
}
