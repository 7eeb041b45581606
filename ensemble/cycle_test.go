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

// Each agent of a long loop that runs once is warned of, naming a few of
// the loop's other agents and how many more: warnings that each named the
// whole loop grew as the square of its length (8,000 agents: 1.1 GB).
func TestLongLoopWarningsNameAFew(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		n    int
		want string // the warning of a0
	}{
		{6, `4:5: agent "a0" is in a loop (with "a1", "a2", "a3", "a4" and "a5") but runs only once`},
		{7, `4:5: agent "a0" is in a loop (with "a1", "a2", "a3", "a4" and 2 other agents) but runs only once`},
		{8000, `4:5: agent "a0" is in a loop (with "a1", "a2", "a3", "a4" and 7995 other agents) but runs only once`},
	} {
		e, err := LoadBytes("loop.yaml", loopFile(c.n), LoadOptions{Kinds: testKinds, LookupEnv: noEnv})
		if err != nil {
			t.Fatal(err)
		}
		if len(e.Warnings) != c.n {
			t.Fatalf("%d agents: %d warnings, want one per agent", c.n, len(e.Warnings))
		}
		if got := e.Warnings[0].Error(); !strings.HasPrefix(got, "loop.yaml:"+c.want) {
			t.Errorf("%d agents: warning\n%s\nwant it to start\nloop.yaml:%s", c.n, got, c.want)
		}
		last := e.Warnings[c.n-1].Error() // the agent last in the file, named first of its loop's
		if n := strings.Count(last, `"`); n > 2*6 {
			t.Errorf("%d agents: the last warning names %d agents, want at most 6:\n%s", c.n, n/2, last)
		}
	}
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

// loopFile is cycleFile with an entry: agent "start" feeds the last agent,
// whose edge from the first closes the cycle, so the file loads (with a
// warning per agent: each runs once).
func loopFile(n int) []byte {
	var b strings.Builder
	b.WriteString("name: loop\nagents:\n  - {name: start, ask: q}\n")
	for i := range n - 1 {
		fmt.Fprintf(&b, "  - {name: a%d, ask: q, dependencies: [a%d]}\n", i, i+1)
	}
	fmt.Fprintf(&b, "  - {name: a%d, ask: q, dependencies: [start, {agent_name: a0, requires_all: false}]}\n", n-1)
	return []byte(b.String())
}

// chainFile is cycleFile without the edge that closes the cycle.
func chainFile(n int) []byte {
	var b strings.Builder
	b.WriteString("name: chain\nagents:\n")
	for i := range n - 1 {
		fmt.Fprintf(&b, "  - {name: a%d, ask: q, dependencies: [a%d]}\n", i, i+1)
	}
	fmt.Fprintf(&b, "  - {name: a%d, ask: q}\n", n-1)
	return []byte(b.String())
}

// BenchmarkLoadChain8000, BenchmarkLoadLoop8000 and BenchmarkLoadCycle8000
// load the same 8,000 agents as a chain, as a loop with an entry and as a
// cycle without one: the three take about the same time
// (docs/performance.md#loading).
func BenchmarkLoadChain8000(b *testing.B) {
	data := chainFile(8000)
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := LoadBytes("chain.yaml", data, LoadOptions{Kinds: testKinds, LookupEnv: noEnv}); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkLoadLoop8000(b *testing.B) {
	data := loopFile(8000)
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		e, err := LoadBytes("loop.yaml", data, LoadOptions{Kinds: testKinds, LookupEnv: noEnv})
		if err != nil {
			b.Fatal(err)
		}
		if len(e.Warnings) == 0 {
			b.Fatal("the loop that runs once was not warned of")
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
