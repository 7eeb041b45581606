package batch_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/ensemble-run/ensemble/engine"
	"github.com/ensemble-run/ensemble/internal/batch"
)

func TestParseInputs(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name, data string
		want       []string // id TAB input, in order
		err        string   // a part of the error
	}{
		{"strings", "\"a\"\n\"b\"\n", []string{"1\ta", "2\tb"}, ""},
		{"a byte order mark", "\ufeff\"a\"\n", []string{"1\ta"}, ""},
		{"objects and blank lines", "{\"id\": \"x\", \"input\": \"one\"}\n\n  \n{\"input\": \"two\"}\r\n{\"id\": 7, \"input\": \"three\"}", []string{"\"x\"\tone", "4\ttwo", "7\tthree"}, ""},
		{"input not a string", `{"id": "j", "input": {"b": [1, 2], "a": null}}`, []string{"\"j\"\t{\"b\":[1,2],\"a\":null}"}, ""},
		{"malformed", "\"a\"\n{\"input\": \"b\"\n", nil, "in.jsonl:2: not valid JSON"},
		{"a number", "\"a\"\n42\n", nil, "in.jsonl:2: a line is a JSON string"},
		{"unknown key", `{"id": 1, "inputs": "x"}`, nil, `in.jsonl:1: unknown key "inputs"`},
		{"no input", `{"id": 1}`, nil, `in.jsonl:1: no "input"`},
		{"id of another type", `{"id": [1], "input": "x"}`, nil, "in.jsonl:1: the id must be a string or a number, got [1]"},
		{"an empty id", "\"a\"\n{\"id\": \"\", \"input\": \"x\"}\n", nil, `in.jsonl:2: the id is empty: give it a text, or leave "id" out to use the line number`},
		{"duplicate ids", "{\"id\": \"a\", \"input\": \"x\"}\n\"y\"\n{\"id\": \"a\", \"input\": \"z\"}\n", nil, `in.jsonl:3: the id "a" is the id of line 1 too`},
		{"an id that is another line's number", "{\"id\": 2, \"input\": \"x\"}\n\"y\"\n", nil, "in.jsonl:2: the id 2 is the id of line 1 too"},
		{"a string id equal to a number", "{\"id\": \"1\", \"input\": \"x\"}\n{\"id\": 1, \"input\": \"y\"}\n", nil, "in.jsonl:2: the id 1 is the id of line 1 too"},
		{"empty", "\n\n", nil, "in.jsonl: no inputs"},
		{"every problem", "1\n2\n\"ok\"\n3\n", nil, "in.jsonl:1: a line is a JSON string (the input) or an object {\"id\": …, \"input\": …}\nin.jsonl:2: "},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			got, err := batch.ParseInputs("in.jsonl", []byte(c.data))
			if c.err != "" {
				if err == nil || !strings.Contains(err.Error(), c.err) {
					t.Fatalf("error %v, want one with %q", err, c.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var lines []string
			for i, in := range got {
				if in.Index != i {
					t.Errorf("input %d has index %d", i, in.Index)
				}
				lines = append(lines, string(in.ID)+"\t"+in.Input)
			}
			if strings.Join(lines, "\n") != strings.Join(c.want, "\n") {
				t.Errorf("got\n%s\nwant\n%s", strings.Join(lines, "\n"), strings.Join(c.want, "\n"))
			}
		})
	}
}

// signalWriter records what is written and says when each write happened.
type signalWriter struct {
	mu     sync.Mutex
	buf    bytes.Buffer
	writes chan struct{}
}

func (w *signalWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf.Write(p)
	select {
	case w.writes <- struct{}{}:
	default:
	}
	return len(p), nil
}

func (w *signalWriter) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.buf.String()
}

// Inputs that finish out of order are written in input order, each line as
// soon as every line before it is: the runs here end last first, except
// the first, which ends while the others still run.
func TestBatchWritesInInputOrder(t *testing.T) {
	t.Parallel()
	inputs, err := batch.ParseInputs("in", []byte("\"a\"\n{\"id\": \"b\", \"input\": \"b\"}\n\"c\"\n\"d\"\n"))
	if err != nil {
		t.Fatal(err)
	}
	release := make([]chan struct{}, len(inputs))
	for i := range release {
		release[i] = make(chan struct{})
	}
	started := make(chan int, len(inputs))
	runOne := func(ctx context.Context, in *batch.Input) (*engine.Result, error) {
		started <- in.Index
		<-release[in.Index]
		reason := engine.Completed
		if in.Input == "c" {
			reason = engine.MaxTotalTurns
		}
		return &engine.Result{Ensemble: "e", Input: in.Input, CompletionReason: reason}, nil
	}
	out := &signalWriter{writes: make(chan struct{}, 1)}
	b := &batch.Batch{Inputs: inputs, RunOne: runOne, Concurrency: len(inputs), Out: out}
	var st *batch.Stats
	done := make(chan struct{})
	go func() { defer close(done); st = b.Run(context.Background()) }()
	for range inputs {
		<-started // every run is going
	}
	close(release[0])
	<-out.writes // the first line comes while the others run
	if got := strings.Count(out.String(), "\n"); got != 1 || !strings.HasPrefix(out.String(), `{"id":1,"result":{"ensemble":"e","input":"a",`) {
		t.Fatalf("after the first run: %q", out.String())
	}
	for i := len(inputs) - 1; i >= 1; i-- {
		close(release[i])
	}
	<-done
	var ids []string
	for _, line := range strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n") {
		var l struct {
			ID     json.RawMessage `json:"id"`
			Result struct {
				Input string `json:"input"`
			} `json:"result"`
		}
		if err := json.Unmarshal([]byte(line), &l); err != nil {
			t.Fatalf("%v: %s", err, line)
		}
		ids = append(ids, string(l.ID)+"="+l.Result.Input)
	}
	if got := strings.Join(ids, " "); got != `1=a "b"=b 3=c 4=d` {
		t.Errorf("lines %s", got)
	}
	if st.Done != 4 || st.Failed != 1 || st.Reasons[engine.MaxTotalTurns] != 1 || st.ExitCode() != engine.ExitMaxTurns {
		t.Errorf("stats %+v, exit %d", st, st.ExitCode())
	}
}

func TestBatchExitCode(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		codes       map[int]int
		errs        []string
		interrupted bool
		want        int
	}{
		{map[int]int{}, nil, false, 0},
		{map[int]int{4: 2}, nil, false, 4},
		{map[int]int{1: 1}, nil, false, 1},
		{map[int]int{3: 1, 4: 1}, nil, false, 1},
		{map[int]int{}, []string{"disk full"}, false, 1},
		{map[int]int{3: 1}, nil, true, 130},
	} {
		st := &batch.Stats{Codes: c.codes, Errs: c.errs, Interrupted: c.interrupted}
		if got := st.ExitCode(); got != c.want {
			t.Errorf("%+v: exit %d, want %d", c, got, c.want)
		}
	}
}

// KeepWritten keeps the output's lines that are the batch's saved lines,
// in order, and cuts the rest: a line cut short, a line of something else.
func TestKeepWritten(t *testing.T) {
	t.Parallel()
	inputs, err := batch.ParseInputs("in.jsonl", []byte("\"a\"\n\"b\"\n\"c\"\n\"d\"\n"))
	if err != nil {
		t.Fatal(err)
	}
	line := func(i int) []byte { return []byte(fmt.Sprintf("{\"id\":%d,\"result\":{}}\n", i+1)) }
	done := map[int]*batch.Outcome{0: {Index: 0, Line: line(0)}, 1: {Index: 1, Line: line(1)}, 3: {Index: 3, Line: line(3)}}
	dir := t.TempDir()
	for _, tc := range []struct {
		name, file string
		kept       int
		want       string
	}{
		{"whole lines, then one cut short", string(line(0)) + string(line(1)) + `{"id":3,"res`, 2, string(line(0)) + string(line(1))},
		{"a line of something else", string(line(0)) + "{\"id\":2,\"result\":{\"other\":1}}\n" + string(line(1)), 1, string(line(0))},
		{"exactly the saved lines", string(line(0)) + string(line(1)), 2, string(line(0)) + string(line(1))},
		{"empty", "", 0, ""},
	} {
		path := filepath.Join(dir, strings.ReplaceAll(tc.name, " ", "-")+".jsonl")
		if err := os.WriteFile(path, []byte(tc.file), 0o600); err != nil {
			t.Fatal(err)
		}
		n, err := batch.KeepWritten(path, inputs, done)
		if err != nil {
			t.Fatal(err)
		}
		got, _ := os.ReadFile(path)
		if n != tc.kept || string(got) != tc.want {
			t.Errorf("%s: kept %d, file %q; want %d, %q", tc.name, n, got, tc.kept, tc.want)
		}
	}
	if n, err := batch.KeepWritten(filepath.Join(dir, "missing.jsonl"), inputs, done); n != 0 || err != nil {
		t.Errorf("a missing file: %d, %v", n, err)
	}
}

// A line longer than MaxLine is refused, with its number, as run refuses
// such an input.
func TestInputLineCap(t *testing.T) {
	t.Parallel()
	data := "\"a\"\n\"" + strings.Repeat("x", batch.MaxLine) + "\"\n"
	if _, err := batch.ParseInputs("in.jsonl", []byte(data)); err == nil || !strings.Contains(err.Error(), "in.jsonl:2: the line is larger than 10MiB") {
		t.Errorf("err %v", err)
	}
}
