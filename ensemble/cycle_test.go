package ensemble_test

import (
	"bytes"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	. "github.com/ensemble-run/ensemble/ensemble"
	"github.com/ensemble-run/ensemble/internal/benchdata"
)

// cycleFile is an ensemble of n ask agents in one cycle with no entry:
// agent i depends on agent i+1, the last on the first.
func cycleFile(n int) []byte {
	var b strings.Builder
	b.WriteString("name: cycle\nagents:\n")
	for i := range n {
		fmt.Fprintf(&b, "  - {name: a%d, ask: q, dependencies: [a%d]}\n", i, (i+1)%n)
	}
	return []byte(b.String())
}

// A long cycle is reported once, with a shortened path: the output stays
// linear in the file's size.
func TestLongCycleReportedOnce(t *testing.T) {
	t.Parallel()
	file := filepath.Join("testdata", "cycle.yaml")
	_, err := LoadBytes(file, cycleFile(8000), LoadOptions{Kinds: testKinds, LookupEnv: noEnv})
	checkErrors(t, err, file,
		`3:5: agent "a0" can never run: it is in a cycle with no entry from outside: a0 → a1 → a2 → … → a7998 → a7999 → a0 (8000 agents)`)
}

func BenchmarkLoadCycle8000(b *testing.B) {
	data := cycleFile(8000)
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := LoadBytes("cycle.yaml", data, LoadOptions{Kinds: testKinds, LookupEnv: noEnv}); err == nil {
			b.Fatal("the cycle was not reported")
		}
	}
}

// BenchmarkLoadDAG loads the 1,000-agent DAG of the performance table, each
// agent depending on every agent of the level before (50,000 dependencies).
func BenchmarkLoadDAG(b *testing.B) {
	var ens, resp bytes.Buffer
	benchdata.DAG(&ens, &resp, 1000, 50, 0)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := LoadBytes("dag.yaml", ens.Bytes(), LoadOptions{Kinds: testKinds, LookupEnv: noEnv}); err != nil {
			b.Fatal(err)
		}
	}
}
