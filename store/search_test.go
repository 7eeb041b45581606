package store_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/ensemble-run/ensemble/store"
)

// SearchTurns gives the turns after a run's first state whose records
// hold a text, and only those, a page after another up to the run's end.
func TestSearchTurns(t *testing.T) {
	t.Parallel()
	p := newPageRuns(t)
	for _, r := range []*store.RunInfo{p.first, p.fork, p.based} {
		all, err := p.db.Turns(r, 0, r.Turns)
		if err != nil {
			t.Fatal(err)
		}
		h, err := p.db.Head(r)
		if err != nil {
			t.Fatal(err)
		}
		needles := []string{"", "no such text"}
		for _, tu := range all {
			for _, rec := range tu.Records {
				if !slices.Contains(needles, strings.ToLower(rec.AgentName)) {
					needles = append(needles, strings.ToLower(rec.AgentName))
				}
			}
		}
		for _, needle := range needles {
			var want []int
			for _, tu := range all {
				if tu.Turn > h.Base && strings.Contains(strings.ToLower(jsonOf(t, tu.Records)), needle) {
					want = append(want, tu.Turn)
				}
			}
			for _, limit := range []int{1, 2, 1000} {
				var got []int
				for after := h.Base; after < r.Turns; {
					rows, last, err := p.db.SearchTurns(r, needle, after, limit)
					if err != nil {
						t.Fatal(err)
					}
					if last <= after || len(rows) > limit {
						t.Fatalf("%s %q after %d, limit %d: %d rows, last %d", r.ID, needle, after, limit, len(rows), last)
					}
					for _, row := range rows {
						got = append(got, row.Turn)
						if len(row.Records) == 0 {
							t.Errorf("%s turn %d: no records", r.ID, row.Turn)
						}
					}
					after = last
				}
				if !slices.Equal(got, want) {
					t.Errorf("%s %q, limit %d: turns %v, want %v", r.ID, needle, limit, got, want)
				}
			}
		}
	}
}
