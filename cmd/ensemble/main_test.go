package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the golden files")

type outcome struct {
	code   int
	stdout string
	stderr string
}

// ensembleCmd runs the command in-process with no terminal and a clean
// environment of profiles.
func ensembleCmd(t *testing.T, stdin string, args ...string) outcome {
	t.Helper()
	return runWith(t, stdin, func(k string) (string, bool) {
		if k == "ENSEMBLE_PROFILES" {
			return "", false
		}
		return os.LookupEnv(k)
	}, args...)
}

// ensembleEnv runs the command in-process with no terminal, no input, and
// only the environment variables of env.
func ensembleEnv(t *testing.T, env map[string]string, args ...string) outcome {
	t.Helper()
	return runWith(t, "", func(k string) (string, bool) {
		v, ok := env[k]
		return v, ok
	}, args...)
}

func runWith(t *testing.T, stdin string, getenv func(string) (string, bool), args ...string) outcome {
	t.Helper()
	var out, errb bytes.Buffer
	std := &stdio{in: strings.NewReader(stdin), out: &out, err: &errb, getenv: getenv}
	code := run(context.Background(), args, std)
	return outcome{code, out.String(), errb.String()}
}

// normalize replaces what changes from run to run (times, durations, paths).
func normalize(s string) string {
	for _, r := range []struct{ re, repl string }{
		{`"timestamp": "[^"]+"`, `"timestamp": "T"`},
		{`"(execution_time|duration_seconds)": [0-9.e-]+`, `"$1": 0`},
		{`\([0-9.]+s\)`, `(Ns)`},
		{`in [0-9.]+s`, `in Ns`},
	} {
		s = regexp.MustCompile(r.re).ReplaceAllString(s, r.repl)
	}
	// Durations in aligned columns (the text summary's time column) keep
	// their width.
	s = regexp.MustCompile(` +[0-9]+\.[0-9]+s\b`).ReplaceAllStringFunc(s, func(m string) string {
		return strings.Repeat(" ", len(m)-2) + "Ns"
	})
	wd, _ := os.Getwd()
	return strings.ReplaceAll(s, wd, "$WD")
}

func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name+".golden")
	got = normalize(got)
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test ./cmd/ensemble -update)", err)
	}
	if got != string(want) {
		t.Errorf("%s differs from the golden file:\n--- got\n%s\n--- want\n%s", name, got, want)
	}
}

const example = "../../examples/iterative-analysis/"

func TestRunJSONIsExactlyTheResult(t *testing.T) {
	t.Parallel()
	o := ensembleCmd(t, "", "run", example+"ensemble.yaml", "--responses", example+"responses.yaml", "--output", "json")
	if o.code != 0 {
		t.Fatalf("exit %d: %s", o.code, o.stderr)
	}
	var res map[string]any
	dec := json.NewDecoder(strings.NewReader(o.stdout))
	if err := dec.Decode(&res); err != nil {
		t.Fatalf("stdout is not one JSON object: %v\n%s", err, o.stdout)
	}
	if dec.More() {
		t.Fatal("stdout holds more than the result object")
	}
	keys := []string{"ensemble", "input", "completion_reason", "turn_count", "agent_execution_count",
		"final_state", "conversation_history", "errors", "warnings", "usage", "duration_seconds"}
	if len(res) != len(keys) {
		t.Errorf("result has keys %v", res)
	}
	for _, k := range keys {
		if _, ok := res[k]; !ok {
			t.Errorf("result lacks %q", k)
		}
	}
	golden(t, "run-iterative-analysis.json", o.stdout)
}

func TestRunTextSummary(t *testing.T) {
	t.Parallel()
	o := ensembleCmd(t, "", "run", example+"ensemble.yaml", "--responses", example+"responses.yaml", "--output", "text")
	if o.code != 0 {
		t.Fatalf("exit %d: %s", o.code, o.stderr)
	}
	golden(t, "run-iterative-analysis.txt", o.stdout)
}

func TestExitCodesAndUsage(t *testing.T) {
	t.Parallel()
	ex := "../../examples/"
	for _, tc := range []struct {
		name   string
		args   []string
		code   int
		stderr string
	}{
		{"runaway loop stops at the turn limit", []string{"run", ex + "runaway-loop/ensemble.yaml", "--responses", ex + "runaway-loop/responses.yaml"}, 3, ""},
		{"--max-turns overrides the file", []string{"run", ex + "writer-reviewer/ensemble.yaml", "--responses", ex + "writer-reviewer/responses.yaml", "--max-turns", "2"}, 3, ""},
		{"--timeout overrides the file", []string{"run", "testdata/slow/ensemble.yaml", "--timeout", "1ms"}, 4, ""},
		{"unknown flag", []string{"run", "x.yaml", "--bogus"}, 2, "unknown flag: --bogus"},
		{"bad output", []string{"run", ex + "writer-reviewer/ensemble.yaml", "--output", "xml"}, 2, `--output must be text, json or jsonl, got "xml"`},
		{"negative parallel", []string{"run", ex + "writer-reviewer/ensemble.yaml", "--parallel", "-1"}, 2, "--parallel must be at least 1, got -1"},
		{"zero parallel", []string{"run", ex + "writer-reviewer/ensemble.yaml", "--parallel", "0"}, 2, "--parallel must be at least 1, got 0"},
		{"zero max turns", []string{"run", ex + "writer-reviewer/ensemble.yaml", "--max-turns", "0"}, 2, "--max-turns must be at least 1, got 0"},
		{"zero timeout", []string{"run", ex + "writer-reviewer/ensemble.yaml", "--timeout", "0s"}, 2, "--timeout must be at least 1ms, got 0s"},
		{"timeout under a millisecond", []string{"run", ex + "writer-reviewer/ensemble.yaml", "--timeout", "1ns"}, 2, "--timeout must be at least 1ms, got 1ns"},
		{"resume: timeout under a millisecond", []string{"resume", "nope.state", "--timeout", "999us"}, 2, "--timeout must be at least 1ms, got 999µs"},
		{"resume: zero max turns", []string{"resume", "nope.state", "--max-turns", "0"}, 2, "--max-turns must be at least 1, got 0"},
		{"infinite max cost", []string{"run", ex + "writer-reviewer/ensemble.yaml", "--max-cost", "Inf"}, 2, "--max-cost must be a finite number more than 0, got +Inf"},
		{"resume: infinite max cost", []string{"resume", "nope.state", "--max-cost", "+Inf"}, 2, "--max-cost must be a finite number more than 0, got +Inf"},
		{"zero max cost", []string{"run", ex + "writer-reviewer/ensemble.yaml", "--max-cost", "0"}, 2, "--max-cost must be a finite number more than 0, got 0"},
		{"missing file", []string{"run", "nope.yaml"}, 2, "nope.yaml"},
		{"missing responses file", []string{"run", ex + "writer-reviewer/ensemble.yaml", "--responses", "nope.yaml"}, 2, "nope.yaml"},
		{"no args", []string{"run"}, 2, "run needs one ensemble FILE"},
		{"ask without a terminal", []string{"run", ex + "runaway-loop/ensemble.yaml"}, 1, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			o := ensembleCmd(t, "", tc.args...)
			if o.code != tc.code || !strings.Contains(o.stderr, tc.stderr) {
				t.Fatalf("exit %d (want %d), stderr %q (want %q)", o.code, tc.code, o.stderr, tc.stderr)
			}
		})
	}
}

func TestInputFromStdinAndFile(t *testing.T) {
	t.Parallel()
	args := []string{"run", example + "ensemble.yaml", "--responses", example + "responses.yaml", "--output", "json"}
	// The newline that ends the last line is not part of the input.
	for stdin, want := range map[string]string{
		"Q4 numbers\n":   `"input": "Q4 numbers",`,
		"Q4 numbers\r\n": `"input": "Q4 numbers",`,
		"Q4 numbers\n\n": `"input": "Q4 numbers\n",`,
		"Q4\nnumbers":    `"input": "Q4\nnumbers",`,
	} {
		o := ensembleCmd(t, stdin, append(args, "--input", "-")...)
		if !strings.Contains(o.stdout, want) {
			t.Fatalf("stdin %q: want %s in %s %s", stdin, want, o.stdout, o.stderr)
		}
	}
	f := filepath.Join(t.TempDir(), "in.txt")
	os.WriteFile(f, []byte("from a file"), 0o644)
	o := ensembleCmd(t, "", append(args, "--input-file", f)...)
	if !strings.Contains(o.stdout, `"input": "from a file"`) {
		t.Fatalf("file input not used: %s %s", o.stdout, o.stderr)
	}
	o = ensembleCmd(t, "", append(args, "--input-file", f, "--input", "x")...)
	if o.code != 2 || !strings.Contains(o.stderr, "mutually exclusive") {
		t.Fatalf("exit %d: %s", o.code, o.stderr)
	}
}

func TestValidate(t *testing.T) {
	t.Parallel()
	o := ensembleCmd(t, "", "validate", example+"ensemble.yaml", "../../examples/writer-reviewer/ensemble.yaml")
	if o.code != 0 || strings.Count(o.stdout, ": ok") != 2 {
		t.Fatalf("exit %d: %s %s", o.code, o.stdout, o.stderr)
	}
	o = ensembleCmd(t, "", "validate", "testdata/broken.yaml")
	if o.code != 2 {
		t.Fatalf("exit %d", o.code)
	}
	golden(t, "validate-broken.txt", o.stderr)
}

func TestJSONLinesStream(t *testing.T) {
	t.Parallel()
	o := ensembleCmd(t, "", "run", example+"ensemble.yaml", "--responses", example+"responses.yaml", "--output", "jsonl")
	lines := strings.Split(strings.TrimSpace(o.stdout), "\n")
	counts := map[string]int{}
	var last map[string]any
	for _, l := range lines {
		var ev map[string]any
		if err := json.Unmarshal([]byte(l), &ev); err != nil {
			t.Fatalf("line %q: %v", l, err)
		}
		counts[ev["type"].(string)]++
		last = ev
	}
	if last["type"] != "run_completed" || counts["agent_completed"] != 5 || counts["turn_started"] != 5 || counts["run_started"] != 1 {
		t.Fatalf("counts %v, last %v", counts, last["type"])
	}
	res := last["result"].(map[string]any)
	if res["turn_count"].(float64) != 5 {
		t.Fatalf("result %v", res)
	}
}

// TestLoadErrorsShowTheSourceOnATerminal: on a terminal each problem comes
// with its line and a caret; elsewhere only the FILE:LINE:COL lines.
func TestLoadErrorsShowTheSourceOnATerminal(t *testing.T) {
	t.Parallel()
	for _, tty := range []bool{false, true} {
		var errb strings.Builder
		std := &stdio{in: strings.NewReader(""), out: io.Discard, err: &errb, errTTY: tty}
		if code := run(context.Background(), []string{"run", "testdata/broken.yaml"}, std); code != 2 {
			t.Fatalf("exit %d", code)
		}
		first := strings.SplitN(errb.String(), "\n", 3)
		if first[0] != `testdata/broken.yaml:1:7: name "Broken Name" is invalid: use only a-z, 0-9, _ and -` {
			t.Fatalf("first line %q", first[0])
		}
		if snippet := strings.HasPrefix(first[1], "    1 | name: Broken Name"); snippet != tty {
			t.Fatalf("terminal %v: second line %q", tty, first[1])
		}
	}
}

// TestOutputDefaultsToJSONOffATerminal: without --output, a stdout that is
// not a terminal gets the JSON result, as with --output json (docs/cli.md#the-result, docs/cli.md).
func TestOutputDefaultsToJSONOffATerminal(t *testing.T) {
	t.Parallel()
	args := []string{"run", example + "ensemble.yaml", "--responses", example + "responses.yaml"}
	def := ensembleCmd(t, "", args...)
	explicit := ensembleCmd(t, "", append(args, "--output", "json")...)
	if def.code != 0 || explicit.code != 0 {
		t.Fatalf("exit %d and %d: %s %s", def.code, explicit.code, def.stderr, explicit.stderr)
	}
	if got, want := normalize(def.stdout), normalize(explicit.stdout); got != want {
		t.Fatalf("default output:\n%s\nwant, as with --output json:\n%s", got, want)
	}
}

func TestVersion(t *testing.T) {
	t.Parallel()
	o := ensembleCmd(t, "", "--version")
	if o.code != 0 || !strings.HasPrefix(o.stdout, "ensemble version ") || strings.TrimSpace(strings.TrimPrefix(o.stdout, "ensemble version ")) == "" {
		t.Fatalf("exit %d: %q %q", o.code, o.stdout, o.stderr)
	}
}

// endless is an input that never ends, as /dev/zero or `yes`.
type endless struct{}

func (endless) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = 'y'
	}
	return len(p), nil
}

// The input is capped (--max-input-size, 10 MiB by default): an endless
// input is a usage error naming the flag and the limit, and nothing runs.
func TestInputIsCapped(t *testing.T) {
	t.Parallel()
	args := []string{"run", example + "ensemble.yaml", "--responses", example + "responses.yaml", "--output", "json"}
	big := filepath.Join(t.TempDir(), "big.txt")
	if err := os.WriteFile(big, bytes.Repeat([]byte("x"), 3000), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		stdin   io.Reader
		args    []string
		wantErr string // "" = the run succeeds
	}{
		{"endless stdin", endless{}, []string{"--input", "-"}, "--input -: reading standard input: the input is larger than 10MiB (raise the limit with --max-input-size)"},
		{"endless stdin, lower cap", endless{}, []string{"--input", "-", "--max-input-size", "2KiB"}, "the input is larger than 2KiB"},
		{"file over the cap", nil, []string{"--input-file", big, "--max-input-size", "2999"}, "--input-file " + big + ": the input is larger than 2999 bytes"},
		{"file at the cap", nil, []string{"--input-file", big, "--max-input-size", "3000"}, ""},
		{"file under a raised cap", nil, []string{"--input-file", big, "--max-input-size", "1MB"}, ""},
		{"bad size", nil, []string{"--input-file", big, "--max-input-size", "ten"}, `want a positive size such as 1048576, 64KiB or 20MB, got "ten"`},
		{"zero size", nil, []string{"--input-file", big, "--max-input-size", "0"}, `got "0"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			in := tt.stdin
			if in == nil {
				in = strings.NewReader("")
			}
			var out, errb bytes.Buffer
			code := run(context.Background(), append(args, tt.args...), &stdio{in: in, out: &out, err: &errb, getenv: noEnv})
			if tt.wantErr == "" {
				if code != 0 || !strings.Contains(out.String(), `"input": "xxx`) {
					t.Fatalf("exit %d: %s", code, errb.String())
				}
				return
			}
			if code != 2 || out.Len() != 0 || !strings.Contains(errb.String(), tt.wantErr) {
				t.Fatalf("exit %d, stdout %d bytes, stderr %q; want exit 2 and %q", code, out.Len(), errb.String(), tt.wantErr)
			}
		})
	}
	if _, err := os.Stat("/dev/zero"); err == nil {
		o := ensembleCmd(t, "", append(args, "--input-file", "/dev/zero")...)
		if o.code != 2 || !strings.Contains(o.stderr, "--input-file /dev/zero: the input is larger than 10MiB") {
			t.Fatalf("/dev/zero: exit %d: %s", o.code, o.stderr)
		}
	}
}

// validate - reads at most as much as the loader accepts: an endless stdin
// is an error naming <stdin>, not an exhausted memory.
func TestValidateStdinIsCapped(t *testing.T) {
	t.Parallel()
	var out, errb bytes.Buffer
	code := run(context.Background(), []string{"validate", "-"}, &stdio{in: endless{}, out: &out, err: &errb, getenv: noEnv})
	if code != 2 || !strings.Contains(errb.String(), "<stdin>: the file is larger than 16 MiB") {
		t.Errorf("exit %d, stderr %q", code, errb.String())
	}
}

// TestWarningsShowTheSourceOnATerminal: validate's warnings come with their
// line and a caret on a terminal, as errors do; elsewhere one line each.
func TestWarningsShowTheSourceOnATerminal(t *testing.T) {
	t.Parallel()
	for _, tty := range []bool{false, true} {
		var errb strings.Builder
		std := &stdio{in: strings.NewReader(""), out: io.Discard, err: &errb, errTTY: tty}
		if code := run(context.Background(), []string{"validate", "testdata/trigger-all-warning.yaml"}, std); code != 0 {
			t.Fatalf("exit %d: %s", code, errb.String())
		}
		lines := strings.Split(strings.TrimSuffix(errb.String(), "\n"), "\n")
		if lines[0] != `testdata/trigger-all-warning.yaml:6:5: warning: agent "b" has trigger: all but no required dependency: it has no effect` {
			t.Fatalf("first line %q", lines[0])
		}
		want := []string{lines[0]}
		if tty {
			want = append(want, "    6 |   - name: b", "      |     ^")
		}
		if !slices.Equal(lines, want) {
			t.Errorf("terminal %v: got\n%s", tty, errb.String())
		}
	}
}

// TestRunSaysTheFilesWarnings: run prints the file's warnings on stderr
// before it starts, as validate does; -q leaves them out.
func TestRunSaysTheFilesWarnings(t *testing.T) {
	t.Parallel()
	const want = `testdata/trigger-all-warning.yaml:6:5: warning: agent "b" has trigger: all but no required dependency: it has no effect`
	for _, quiet := range []bool{false, true} {
		var errb strings.Builder
		std := &stdio{in: strings.NewReader(""), out: io.Discard, err: &errb}
		args := []string{"run", "testdata/trigger-all-warning.yaml", "--output", "json", "--responses", "testdata/trigger-all-warning.responses.yaml"}
		if quiet {
			args = append(args, "-q")
		}
		if code := run(context.Background(), args, std); code != 0 {
			t.Fatalf("exit %d: %s", code, errb.String())
		}
		if got := strings.Contains(errb.String(), want); got == quiet {
			t.Errorf("quiet %v: stderr %q", quiet, errb.String())
		}
	}
}
