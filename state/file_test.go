package state_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ensemble-run/ensemble/state"
)

const hash = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

func sample() *state.File {
	msg := "boom"
	st := state.Restore(state.Contents{
		Input:               "the input",
		TurnCount:           2,
		AgentExecutionCount: map[string]int{"a": 2, "b": 1},
		OutputCount:         map[string]int{"a": 1, "b": 1},
		AccumulatedContext:  map[string]any{"a": map[string]any{"n": 1.0, "list": []any{"x", true}}, "b": "y"},
		Edges:               map[string]map[string]*state.EdgeState{"b": {"a": {Triggered: 1, Consumed: 1}}},
		Pending:             []state.AgentRequest{{From: "a", Target: "b", Parameters: map[string]any{"k": "v"}}},
		Memory:              map[string]json.RawMessage{"a": json.RawMessage(`[{"role":"user","content":"hi"}]`)},
		Warnings:            []state.Warning{{TurnNumber: 1, AgentName: "b", Message: "w"}},
		History: []*state.Record{
			{TurnNumber: 1, AgentName: "a", Execution: 1, OutputData: "x", Timestamp: time.Unix(1, 5).UTC()},
			{TurnNumber: 2, AgentName: "a", Execution: 2, Error: &msg},
			{TurnNumber: 2, AgentName: "b", Execution: 1, OutputData: "y"},
		},
	})
	f := &state.File{
		Ensemble:  state.FileRef{Name: "e", Path: "/abs/e.yaml", SHA256: hash},
		Responses: &state.FileRef{Path: "/abs/r.yaml", SHA256: hash},
		Profiles:  []string{"/abs/p.yaml"},
		State:     st,
	}
	f.Options.SetTimeout(1500 * time.Millisecond)
	return f
}

func TestSaveLoadRoundTrip(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "run.state.json")
	f := sample()
	if err := state.Save(path, f); err != nil {
		t.Fatal(err)
	}
	g, err := state.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	if g.Format != state.FileFormat || g.Version != state.FileVersion || g.SavedAt.IsZero() {
		t.Fatalf("envelope %q %d %v", g.Format, g.Version, g.SavedAt)
	}
	a, _ := json.Marshal(f)
	b, _ := json.Marshal(g)
	if !bytes.Equal(a, b) {
		t.Fatalf("round trip differs:\n%s\n%s", a, b)
	}
	if g.Options.Timeout() != 1500*time.Millisecond {
		t.Fatalf("timeout %v", g.Options.Timeout())
	}
	if got := g.State.HistoryValues(); len(got) != 3 {
		t.Fatalf("history values %v", got)
	}
	fi, err := os.Stat(path)
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("mode %v %v", fi.Mode(), err)
	}
	// Nothing is left beside it.
	entries, _ := os.ReadDir(filepath.Dir(path))
	if len(entries) != 1 {
		t.Fatalf("directory holds %v", entries)
	}
}

func TestSaveReplacesAndFailsCleanly(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := filepath.Join(dir, "s.json")
	f := sample()
	for i := range 3 {
		runTurnsTo(f.State, i+2)
		if err := state.Save(path, f); err != nil {
			t.Fatal(err)
		}
	}
	g, err := state.Load(path)
	if err != nil || g.State.TurnCount != 4 {
		t.Fatalf("%v %v", g, err)
	}
	if err := state.Save(filepath.Join(dir, "missing", "s.json"), f); err == nil {
		t.Fatal("saving into a missing directory succeeded")
	}
	if err := state.Save(path, &state.File{}); err == nil {
		t.Fatal("saving nothing succeeded")
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 {
		t.Fatalf("a temporary file was left behind: %v", entries)
	}
}

func TestLoadRejectsBadFiles(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	good, _ := json.Marshal(func() *state.File {
		f := sample()
		f.Format, f.Version = state.FileFormat, state.FileVersion
		return f
	}())
	edit := func(f func(m map[string]any)) string {
		var m map[string]any
		json.Unmarshal(good, &m)
		f(m)
		b, _ := json.Marshal(m)
		return string(b)
	}
	st := func(m map[string]any) map[string]any { return m["state"].(map[string]any) }
	for _, tc := range []struct{ name, data, msg string }{
		{"empty", "", "empty"},
		{"not json", "hello", "not valid JSON"},
		{"truncated", string(good[:len(good)/2]), "corrupt or truncated"},
		{"a json array", "[1,2]", "not valid JSON"},
		{"another json file", `{"name": "x"}`, "not an ensemble state file"},
		{"unknown version", edit(func(m map[string]any) { m["version"] = 99 }), "unknown state file version 99"},
		{"version not a number", edit(func(m map[string]any) { m["version"] = "1" }), `"version" is missing or not an integer`},
		{"no version", edit(func(m map[string]any) { delete(m, "version") }), `"version" is missing`},
		{"no state", edit(func(m map[string]any) { delete(m, "state") }), `"state" is missing`},
		{"no ensemble path", edit(func(m map[string]any) { m["ensemble"] = map[string]any{"sha256": hash} }), `"ensemble.path"`},
		{"bad hash", edit(func(m map[string]any) { m["ensemble"].(map[string]any)["sha256"] = "abc" }), "not a sha256"},
		{"wrong types", edit(func(m map[string]any) { st(m)["turn_count"] = "two" }), "corrupt"},
		{"negative turn", edit(func(m map[string]any) { st(m)["turn_count"] = -1 }), "negative"},
		{"more outputs than executions", edit(func(m map[string]any) { st(m)["output_count"] = map[string]any{"a": 5} }), "more outputs (5) than executions (2)"},
		{"history beyond the turn count", edit(func(m map[string]any) { st(m)["turn_count"] = 1 }), "outside 1..1"},
		{"null record", edit(func(m map[string]any) { st(m)["conversation_history"] = []any{nil} }), "null"},
		{"negative timeout", edit(func(m map[string]any) { m["options"] = map[string]any{"timeout_seconds": -1} }), "options"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(dir, strings.ReplaceAll(tc.name, " ", "-")+".json")
			os.WriteFile(path, []byte(tc.data), 0o600)
			_, err := state.Load(path)
			var fe *state.FileError
			if !errors.As(err, &fe) || !strings.Contains(err.Error(), tc.msg) || !strings.Contains(err.Error(), path) {
				t.Fatalf("error %v, want a *FileError naming the file and containing %q", err, tc.msg)
			}
		})
	}
	if _, err := state.Load(filepath.Join(dir, "nope.json")); err == nil || !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("missing file: %v", err)
	}
	path := filepath.Join(dir, "v.json")
	os.WriteFile(path, []byte(edit(func(m map[string]any) { m["version"] = 2 })), 0o600)
	if _, err := state.Load(path); !errors.Is(err, state.ErrUnknownVersion) {
		t.Fatalf("unknown version: %v", err)
	}
}

// Every prefix of a state file, as a crash of a non-atomic writer would
// leave it, is an error and never a panic.
func TestEveryTruncationIsAnError(t *testing.T) {
	t.Parallel()
	f := sample()
	path := filepath.Join(t.TempDir(), "s.json")
	if err := state.Save(path, f); err != nil {
		t.Fatal(err)
	}
	data, _ := os.ReadFile(path)
	for n := range len(data) - 2 { // the last bytes are "}\n"
		if _, err := state.Parse(data[:n]); err == nil {
			t.Fatalf("a prefix of %d bytes parsed", n)
		}
	}
}

// A reader polling the file while it is rewritten only ever sees complete
// states, in order. The writer starts once both readers have read the file,
// and writes at least 40 times and until the readers have read it 20 times
// while it was being rewritten: a reader that never ran checks nothing, so
// that fails the test (after 30 s, generous on a loaded machine).
func TestConcurrentReaderSeesCompleteStates(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "s.json")
	f := sample()
	// A large state, so that a write is not a single page.
	c := f.State.Contents()
	c.AccumulatedContext["big"] = strings.Repeat("x", 64<<10)
	f.State = state.Restore(c)
	if err := state.Save(path, f); err != nil {
		t.Fatal(err)
	}
	var done atomic.Bool
	var wg sync.WaitGroup
	var reads [2]atomic.Int64
	var bad atomic.Int64
	defer func() { done.Store(true); wg.Wait() }()
	for r := range reads {
		wg.Add(1)
		go func() {
			defer wg.Done()
			last := 0
			for !done.Load() {
				g, err := state.Load(path)
				if err == nil && g.State.TurnCount < last {
					err = errors.New("went back in time")
				}
				if err != nil {
					t.Errorf("reader after turn %d: %v", last, err)
					bad.Add(1)
					return
				}
				last = g.State.TurnCount
				reads[r].Add(1)
			}
		}()
	}
	total := func() int64 { return reads[0].Load() + reads[1].Load() }
	deadline := time.Now().Add(30 * time.Second)
	for reads[0].Load() == 0 || reads[1].Load() == 0 {
		if bad.Load() > 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the readers had not read the file after 30 s (%d and %d reads)", reads[0].Load(), reads[1].Load())
		}
		time.Sleep(time.Millisecond)
	}
	before := total()
	for i := 0; i < 40 || total()-before < 20; i++ {
		if bad.Load() > 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("after 30 s and %d writes the readers had read the file %d times while it was rewritten, not 20", i, total()-before)
		}
		runTurnsTo(f.State, i+2)
		if err := state.Save(path, f); err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("%d reads while the file was rewritten", total()-before)
}

func FuzzParse(f *testing.F) {
	s := sample()
	s.Format, s.Version = state.FileFormat, state.FileVersion
	good, _ := json.Marshal(s)
	f.Add(good)
	f.Add([]byte(`{"format":"ensemble-state","version":1,"ensemble":{"path":"x","sha256":"` + hash + `"},"state":{}}`))
	f.Add([]byte(`{"format":"ensemble-state","version":1,"state":{"edges":{"a":{"b":null}},"conversation_history":[null]}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		g, err := state.Parse(data)
		if err == nil {
			// What parses is usable by the engine: its maps exist.
			st := g.State
			if st.ExecutionCounts() == nil || st.Context() == nil || st.Contents().OutputCount == nil || st.Contents().Edges == nil || st.Contents().Memory == nil {
				t.Fatalf("parsed with nil maps: %s", data)
			}
			st.HistoryValues()
		}
	})
}

// A state file larger than MaxFileSize is refused from its size, before
// anything is read.
func TestLoadRefusesAHugeFile(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "huge.json")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(state.MaxFileSize + 1); err != nil {
		t.Skip("no sparse files here:", err)
	}
	f.Close()
	_, err = state.Load(path)
	var fe *state.FileError
	if !errors.As(err, &fe) || !strings.Contains(err.Error(), "larger than 1GiB, the limit of a JSON state file") {
		t.Errorf("err %v", err)
	}
}
