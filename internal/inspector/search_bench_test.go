package inspector_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"testing"

	"github.com/ensemble-run/ensemble/internal/benchdata"
	"github.com/ensemble-run/ensemble/internal/inspector"
)

// BenchmarkSearch searches the saved 2×16,000-turn run (32,001 turns) for
// a text it does not hold ("absent": every turn is looked into) and for
// one most turns hold ("common": the first page of matches)
// (docs/performance.md, "The inspector").
func BenchmarkSearch(b *testing.B) {
	run, err := benchdata.SaveLoop(b.Context(), b.TempDir(), benchdata.LongRunTurns, 0)
	if err != nil {
		b.Fatal(err)
	}
	srv, err := inspector.New(inspector.Options{DBs: []string{run.DB}, Token: "t", LookupEnv: noEnv})
	if err != nil {
		b.Fatal(err)
	}
	ts := httptest.NewServer(srv.Handler())
	defer func() { ts.Close(); srv.Close() }()
	search := func(q string) (res inspector.SearchResult) {
		resp, err := http.Get(ts.URL + "/api/run/search?token=t&id=" + url.QueryEscape(run.ID) + "&q=" + url.QueryEscape(q))
		if err != nil {
			b.Fatal(err)
		}
		defer resp.Body.Close()
		if err := json.NewDecoder(resp.Body).Decode(&res); err != nil || resp.StatusCode != 200 {
			b.Fatalf("search: %d, %v", resp.StatusCode, err)
		}
		return res
	}
	for _, c := range []struct{ name, q string }{{"absent", "nowhere at all"}, {"common", "PING"}} {
		b.Run(c.name, func(b *testing.B) {
			for b.Loop() {
				res := search(c.q)
				if c.name == "absent" && (len(res.Matches) != 0 || res.Searched != res.Last) {
					b.Fatalf("%+v", res)
				}
				if c.name == "common" && len(res.Matches) != 50 {
					b.Fatalf("%d matches", len(res.Matches))
				}
			}
		})
	}
}
