package inspector_test

import (
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ensemble-run/ensemble/durable"
	"github.com/ensemble-run/ensemble/internal/inspector"
)

// An answer to a run whose ensemble file changed since it was saved is
// refused with the hint the durable error carries, as every door prints it.
func TestAnswerRefusalCarriesTheHint(t *testing.T) {
	t.Parallel()
	needPython(t)
	dir := t.TempDir()
	if err := os.CopyFS(dir, os.DirFS(filepath.Join("..", "..", "examples", "approval"))); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "runs.db")
	id := saveRunOf(t, path, dir, false)
	yaml := filepath.Join(dir, "ensemble.yaml")
	b, err := os.ReadFile(yaml)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(yaml, append(b, "\n# changed\n"...), 0o644); err != nil {
		t.Fatal(err)
	}
	srv, err := inspector.New(inspector.Options{DBs: []string{path}, Token: "secret-token", LookupEnv: noEnv})
	if err != nil {
		t.Fatal(err)
	}
	f := &fixture{srv: srv, ts: httptest.NewServer(srv.Handler())}
	t.Cleanup(func() {
		f.ts.Close()
		srv.Close()
	})
	var got struct{ Error string }
	code := f.do(t, "POST", "/api/run/answer?id="+id, map[string]any{"answers": map[string]string{"approver": `{"approved": true}`}}, &got)
	if h := durable.Hint(&durable.ChangedFilesError{}); code != 409 || !strings.HasSuffix(got.Error, "\n"+h) {
		t.Fatalf("answer after the file changed: %d %q, want 409 ending with %q", code, got.Error, h)
	}
}
