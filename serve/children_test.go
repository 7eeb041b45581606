package serve_test

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/ensemble-run/ensemble/serve"
)

// A child ensemble that uses its parent's profiles does not load on its
// own: serving the folder leaves it out without reporting it (its parent
// runs it), while a broken file of the folder is reported.
func TestServeLeavesOutAChildQuietly(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	for name, text := range map[string]string{
		"parent.yaml": "name: parent\nmodels:\n  fast: {provider: ollama, model: m}\n" +
			"agents:\n  - name: round\n    ensemble: kids/child.yaml\n",
		"kids/child.yaml": "name: child\nagents:\n  - name: think\n    model_profile: fast\n",
		"broken.yaml":     "name: broken\nagents:\n  - name: x\n    model_profile: nope\n",
	} {
		path := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	var skipped []string
	s := startServer(t, dir, func(o *serve.Options) {
		o.Skipped = func(path string, _ error) { skipped = append(skipped, filepath.Base(path)) }
	})
	if !slices.Equal(skipped, []string{"broken.yaml"}) {
		t.Errorf("skipped %v, want only broken.yaml", skipped)
	}
	if code, b, _ := s.do(t, "GET", "/v1/ensembles", nil); code != 200 || !strings.Contains(string(b), `"name":"parent"`) {
		t.Errorf("GET /v1/ensembles: %d %s", code, b)
	}
}
