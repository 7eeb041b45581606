package graph_test

import (
	"bytes"
	"strings"
	"testing"

	"github.com/ensemble-run/ensemble/ensemble"
	. "github.com/ensemble-run/ensemble/internal/graph"
	"github.com/ensemble-run/ensemble/kinds"
)

// A fan-out agent is a stacked node that names its expression and the
// options that differ from the defaults.
func TestFanOutNode(t *testing.T) {
	t.Parallel()
	e, err := ensemble.LoadBytes("testdata/tricky/fan.yaml", []byte(`name: fan
agents:
  - {name: split, ask: q}
  - name: each
    script: scripts/x.sh
    fan_out: {over: "context.split.parts", max_items: 50, on_error: fail}
    dependencies: [split]
`), kinds.Builtin().Load(ensemble.LoadOptions{LookupEnv: func(string) (string, bool) { return "", false }}))
	if err != nil {
		t.Fatal(err)
	}
	var m, d bytes.Buffer
	Mermaid(&m, e)
	DOT(&d, e)
	if want := `a2@{ shape: procs, label: "each<br/>script: scripts/x.sh<br/>fan_out over context.split.parts<br/>max_items 50, on_error fail" }`; !strings.Contains(m.String(), want) {
		t.Errorf("mermaid lacks %q:\n%s", want, m.String())
	}
	if want := `"each" [label="each\nscript: scripts/x.sh\nfan_out over context.split.parts\nmax_items 50, on_error fail", class="script", shape=box3d,`; !strings.Contains(d.String(), want) {
		t.Errorf("dot lacks %q:\n%s", want, d.String())
	}
}
