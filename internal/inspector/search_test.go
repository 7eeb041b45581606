package inspector_test

import (
	"fmt"
	"net/url"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ensemble-run/ensemble/internal/inspector"
	"github.com/ensemble-run/ensemble/store"
)

// search asks the fixture's server for q in run id.
func (f *fixture) search(t *testing.T, id, q, more string) inspector.SearchResult {
	t.Helper()
	var res inspector.SearchResult
	if code := f.do(t, "GET", "/api/run/search?id="+url.QueryEscape(id)+"&q="+url.QueryEscape(q)+more, nil, &res); code != 200 {
		t.Fatalf("search %q: %d", q, code)
	}
	return res
}

// where is a match as the tests name it: AGENT#N field (role).
func where(m inspector.Match) string {
	s := fmt.Sprintf("%s#%d %s", m.Agent, m.N, m.Field)
	if m.Role != "" {
		s += " (" + m.Role + ")"
	}
	return s
}

// The search of a run finds a text, case aside, in its executions'
// outputs and inputs, each match naming the execution it is in.
func TestSearchOutputsAndInputs(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "runs.db")
	id := saveRunOf(t, path, filepath.Join("testdata", "layered"), true)
	f := serveDB(t, path)
	cases := []struct {
		q    string
		want []string // in order
	}{
		{"NEEDLE-in-the", []string{"fetch#1 output", "parse#1 input"}},
		{"two warnings", []string{"lint#1 output", "fix#1 input"}},
		{`"main.go"`, []string{"parse#1 output", "lint#1 input", "test#1 input"}},
		{"nowhere in this run", nil},
	}
	for _, c := range cases {
		res := f.search(t, id, c.q, "")
		var got []string
		for _, m := range res.Matches {
			got = append(got, where(m))
			if !strings.Contains(strings.ToLower(m.Snippet), strings.ToLower(c.q)) {
				t.Errorf("%q: the snippet of %s is %q", c.q, where(m), m.Snippet)
			}
		}
		if strings.Join(got, ", ") != strings.Join(c.want, ", ") {
			t.Errorf("%q: matches %v, want %v", c.q, got, c.want)
		}
		if res.More || res.Searched != res.Last || res.Last == 0 {
			t.Errorf("%q: searched %d of %d (more %v), want the whole run", c.q, res.Searched, res.Last, res.More)
		}
	}
	// A limit cuts the matches, and the next page goes on after them.
	first := f.search(t, id, "two warnings", "&limit=1")
	if len(first.Matches) != 1 || !first.More {
		t.Fatalf("limit 1: %+v", first)
	}
	next := f.search(t, id, "two warnings", fmt.Sprintf("&after=%d", first.Searched))
	if len(next.Matches) != 1 || where(next.Matches[0]) != "fix#1 input" {
		t.Errorf("after turn %d: %+v, want fix's input", first.Searched, next.Matches)
	}
	for _, q := range []string{"", "   ", strings.Repeat("x", 201)} {
		if code := f.do(t, "GET", "/api/run/search?id="+url.QueryEscape(id)+"&q="+url.QueryEscape(q), nil, nil); code != 400 {
			t.Errorf("q %q: %d, want 400", q, code)
		}
	}
}

// The search finds the messages of an LLM agent's conversation, each once
// (its memory after each turn repeats the messages before).
func TestSearchMessages(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "runs.db")
	id, _ := saveTracedRun(t, path)
	f := serveDB(t, path)
	res := f.search(t, id, "FEW WORDS", "")
	var got []string
	for _, m := range res.Matches {
		got = append(got, where(m))
	}
	// The messages an execution added are its input too.
	if strings.Join(got, ", ") != "writer#1 input, writer#1 message (tool)" {
		t.Errorf("matches %v, want the tool's result in writer's first conversation, once", got)
	}
	res = f.search(t, id, "draft two", "")
	got = nil
	for _, m := range res.Matches {
		got = append(got, where(m))
	}
	if strings.Join(got, ", ") != "writer#2 output, writer#2 input, writer#2 message (assistant), reviewer#2 input" {
		t.Errorf("matches %v", got)
	}
}

// The runs of one ensemble, each with its agents' totals: the other
// ensembles' runs are not among them.
func TestAcrossRuns(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "runs.db")
	first := saveRunOf(t, path, filepath.Join("testdata", "layered"), true)
	saveTracedRun(t, path)
	second := saveRunOf(t, path, filepath.Join("testdata", "layered"), true)
	f := serveDB(t, path)
	var got inspector.EnsembleStats
	if code := f.do(t, "GET", "/api/run/across?id="+url.QueryEscape(second), nil, &got); code != 200 {
		t.Fatalf("across: %d", code)
	}
	if got.Ensemble != "layered" || got.Total != 2 || len(got.Runs) != 2 || got.Runs[0].ID != first || got.Runs[1].ID != second {
		t.Fatalf("across: %+v, want the two runs of layered", got)
	}
	for _, r := range got.Runs {
		if a := r.Agents["fix"]; a == nil || a.Executions != 1 {
			t.Errorf("run %s: fix %+v, want one execution", r.ID, a)
		}
		if a := r.Agents["review"]; a == nil || a.Executions != 0 {
			t.Errorf("run %s: review %+v, want a skip, no execution", r.ID, a)
		}
	}
}

// A fork's turns copied from its parent are searched too (they are in its
// first state, not in rows of their own).
func TestSearchAFork(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "runs.db")
	id := saveRunOf(t, path, filepath.Join("testdata", "layered"), true)
	db, err := store.Open(path, false, store.SyncNormal)
	if err != nil {
		t.Fatal(err)
	}
	info, err := db.Run(id)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Fork(info, 3, "forked"); err != nil {
		t.Fatal(err)
	}
	db.Close()
	f := serveDB(t, path)
	res := f.search(t, "forked", "needle-in-the", "")
	var got []string
	for _, m := range res.Matches {
		got = append(got, fmt.Sprintf("%s in turn %d", where(m), m.Turn))
	}
	if strings.Join(got, ", ") != "fetch#1 output in turn 1, parse#1 input in turn 2" || res.Last != 3 || res.More {
		t.Errorf("the fork's matches: %v (searched %d of %d)", got, res.Searched, res.Last)
	}
}

// A match in a child ensemble's agent names it by its path and its place
// in the turn's execution that ran it, as the execution API takes it.
func TestSearchChildren(t *testing.T) {
	t.Parallel()
	needPython(t)
	path := filepath.Join(t.TempDir(), "runs.db")
	id := saveRunOf(t, path, filepath.Join("testdata", "deep"), false)
	f := serveDB(t, path)
	res := f.search(t, id, `"again"`, "")
	var found *inspector.Match
	for i, m := range res.Matches {
		if m.Agent == "outer/step/count" && m.Field == "output" {
			found = &res.Matches[i]
		}
	}
	if found == nil {
		t.Fatalf("no match in outer/step/count's output: %+v", res.Matches)
	}
	var ex inspector.Execution
	q := fmt.Sprintf("/api/run/execution?id=%s&agent=%s&n=%d&turn=%d", url.QueryEscape(id), url.QueryEscape(found.Agent), found.N, found.Turn)
	if code := f.do(t, "GET", q, nil, &ex); code != 200 {
		t.Fatalf("%s: %d", q, code)
	}
	if out := fmt.Sprint(ex.Record.OutputData); !strings.Contains(out, "again") {
		t.Errorf("the execution the match names (%s#%d, turn %d) has output %s", found.Agent, found.N, found.Turn, out)
	}
}
