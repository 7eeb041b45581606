package inspector_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// copyExample copies examples/NAME into a folder of the test, which the
// test may then change (its ensemble file removed, say).
func copyExample(t *testing.T, name string) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), name)
	if out, err := exec.Command("cp", "-r", filepath.Join("..", "examples", name), dir).CombinedOutput(); err != nil {
		t.Fatalf("cp: %v: %s", err, out)
	}
	return dir
}

// A fork refused because the run's ensemble file is gone writes nothing:
// no run is left behind in the database, unfinished (which a later resume
// without --run-id would then have to choose among), as resume --from-turn
// writes nothing when its checks refuse.
func TestForkRefusedLeavesNoRun(t *testing.T) {
	t.Parallel()
	needPython(t)
	dir := copyExample(t, "map-reduce")
	path := filepath.Join(t.TempDir(), "runs.db")
	id := saveRunOf(t, path, dir, true)
	if err := os.Remove(filepath.Join(dir, "ensemble.yaml")); err != nil {
		t.Fatal(err)
	}
	f := serveDB(t, path)
	var got struct {
		ID    string
		Error string
	}
	if code := f.do(t, "POST", "/api/run/fork?id="+id, map[string]any{"turn": 2}, &got); code == 200 || !strings.Contains(got.Error, "cannot be read") {
		t.Errorf("a fork of a run whose ensemble file is gone: %d %+v, want it refused, saying why", code, got)
	}
	if runs := f.runs(t, ""); len(runs) != 1 {
		t.Errorf("after a refused fork, the database holds %v, want the run forked only", ids(runs))
	}
}
