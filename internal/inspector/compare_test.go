package inspector_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/ensemble-run/ensemble/internal/benchdata"
	"github.com/ensemble-run/ensemble/internal/inspector"
)

// compareServer serves a saved ping-pong loop of turns executions of each
// agent; get GETs an API path of it.
func compareServer(tb testing.TB, turns int) (srv *inspector.Server, id string, get func(path string) []byte) {
	tb.Helper()
	run, err := benchdata.SaveLoop(context.Background(), tb.TempDir(), turns, 0)
	if err != nil {
		tb.Fatal(err)
	}
	srv, err = inspector.New(inspector.Options{DBs: []string{run.DB}, Token: "secret-token"})
	if err != nil {
		tb.Fatal(err)
	}
	ts := httptest.NewServer(srv.Handler())
	tb.Cleanup(func() {
		ts.Close()
		srv.Close()
	})
	return srv, run.ID, func(path string) []byte {
		tb.Helper()
		req, _ := http.NewRequest("GET", ts.URL+path, nil)
		req.Header.Set("X-Ensemble-Token", "secret-token")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			tb.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != 200 {
			tb.Fatalf("GET %s: %d %s", path, resp.StatusCode, b)
		}
		return b
	}
}

// "Compare with" asks for another execution of an agent by its number
// alone: found through the run's totals, it reads a few rows, not every
// turn of the run.
func TestCompareReadsFewRows(t *testing.T) {
	t.Parallel()
	const turns = 300 // 601 turns, ping in every other one
	srv, id, get := compareServer(t, turns)
	get("/api/run?db=0&id=" + id) // the run's page: its totals are counted
	for _, n := range []int{1, 150, turns} {
		before := inspector.RowsRead(srv, 0)
		var ex struct {
			Record struct {
				AgentName  string `json:"agent_name"`
				Execution  int    `json:"execution"`
				TurnNumber int    `json:"turn_number"`
			}
		}
		if err := json.Unmarshal(get(fmt.Sprintf("/api/run/execution?db=0&id=%s&agent=ping&n=%d", id, n)), &ex); err != nil {
			t.Fatal(err)
		}
		if r := ex.Record; r.AgentName != "ping" || r.Execution != n || r.TurnNumber != 2*n {
			t.Errorf("ping #%d: got %+v, want turn %d", n, r, 2*n)
		}
		if read := inspector.RowsRead(srv, 0) - before; read > 10 {
			t.Errorf("ping #%d: %d rows read, of a run of %d turns", n, read, benchdata.LoopTurns(turns))
		}
	}
}

// BenchmarkCompare is "Compare with" on the long run (2×16,000 turns): an
// execution found by its number alone.
func BenchmarkCompare(b *testing.B) {
	_, id, get := compareServer(b, benchdata.LongRunTurns)
	get("/api/run?db=0&id=" + id)
	for i := 0; b.Loop(); i++ {
		get(fmt.Sprintf("/api/run/execution?db=0&id=%s&agent=ping&n=%d", id, 1+i%benchdata.LongRunTurns))
	}
}
