package script

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/ensemble-run/ensemble/agent"
	"github.com/ensemble-run/ensemble/ensemble"
	"github.com/ensemble-run/ensemble/internal/runners"
	"github.com/ensemble-run/ensemble/scriptexec"
)

const fakeKeyVar = "FAKE_ENSEMBLE_TEST_API_KEY"

func testdataDir(t *testing.T) string {
	t.Helper()
	dir, err := filepath.Abs("testdata")
	if err != nil {
		t.Fatal(err)
	}
	return dir
}

// testEnsemble builds an ensemble by hand whose folder is testdata/, with a
// model profile naming fakeKeyVar in api_key_env.
func testEnsemble(t *testing.T, agents ...*ensemble.Agent) *ensemble.Ensemble {
	t.Helper()
	dir := testdataDir(t)
	for _, a := range agents {
		if s := SpecOf(a); a.Kind == (Kind{}) && s.Path == "" {
			s.Path = filepath.Join(dir, s.Script)
		}
	}
	e := &ensemble.Ensemble{
		Path: filepath.Join(dir, "ensemble.yaml"),
		Dir:  dir,
		Name: "test",
		Models: map[string]*ensemble.ModelProfile{
			"efficient": {Name: "efficient", Provider: "openai", Model: "m", APIKeyEnv: fakeKeyVar},
			"local":     {Name: "local", Provider: "ollama", Model: "m"},
		},
		Agents: agents,
	}
	e.Index()
	return e
}

func scriptAgent(name, script string, params map[string]any) *ensemble.Agent {
	return &ensemble.Agent{Name: name, Kind: Kind{}, Spec: &Spec{Script: script, Parameters: params}}
}

// environWithSecret is the parent environment plus a fake API key.
func environWithSecret() []string {
	return append(os.Environ(), fakeKeyVar+"=sk-must-not-leak")
}

func scriptRequest(e *ensemble.Ensemble, name string) *agent.Request {
	return &agent.Request{Ensemble: e, Agent: e.Agent(name), Input: "the input", Turn: 1, Execution: 1}
}

func TestScriptStdinProtocolRoundTrip(t *testing.T) {
	t.Parallel()
	a := scriptAgent("echo", "echo.py", map[string]any{"columns": []any{"region", "revenue"}, "env_names": []any{"ENSEMBLE_AGENT"}})
	e := testEnsemble(t, a)
	req := &agent.Request{
		Ensemble:          e,
		Agent:             a,
		Input:             "Sales figures for Q3",
		Turn:              4,
		Execution:         2,
		Dependencies:      map[string]any{"extractor": map[string]any{"rows": 3.0}},
		Context:           map[string]any{"extractor": map[string]any{"rows": 3.0}, "other": "text"},
		RequestParameters: map[string]any{"focus": "EMEA"},
	}
	res := (&Runner{Environ: environWithSecret}).Run(context.Background(), req)
	if res.Err != nil {
		t.Fatal(res.Err)
	}
	out := res.Output.(map[string]any)
	raw := out["raw"].(string)
	wantOrder := []string{`"agent"`, `"input"`, `"parameters"`, `"dependencies"`, `"context"`, `"turn"`, `"execution"`, `"request_parameters"`}
	last := -1
	for _, k := range wantOrder {
		i := strings.Index(raw, k+":")
		if i < 0 || i < last {
			t.Fatalf("stdin %s: key %s missing or out of order", raw, k)
		}
		last = i
	}
	want := map[string]any{
		"agent":              "echo",
		"input":              "Sales figures for Q3",
		"parameters":         map[string]any{"columns": []any{"region", "revenue"}, "env_names": []any{"ENSEMBLE_AGENT"}},
		"dependencies":       map[string]any{"extractor": map[string]any{"rows": 3.0}},
		"context":            map[string]any{"extractor": map[string]any{"rows": 3.0}, "other": "text"},
		"turn":               4.0,
		"execution":          2.0,
		"request_parameters": map[string]any{"focus": "EMEA"},
	}
	if got := out["stdin"]; !reflect.DeepEqual(got, want) {
		t.Errorf("stdin object\n got %#v\nwant %#v", got, want)
	}
	if got := out["cwd"]; got != e.Dir {
		t.Errorf("working directory %v, want the ensemble's folder %s", got, e.Dir)
	}
	// InputData is the stdin object less context.
	in := res.InputData.(map[string]any)
	if _, has := in["context"]; has {
		t.Error("InputData holds context")
	}
	for _, k := range []string{"agent", "input", "parameters", "dependencies", "turn", "execution", "request_parameters"} {
		if _, has := in[k]; !has {
			t.Errorf("InputData lacks %q", k)
		}
	}
}

func TestScriptStdinDefaults(t *testing.T) {
	t.Parallel()
	e := testEnsemble(t, scriptAgent("echo", "echo.py", nil))
	res := (&Runner{}).Run(context.Background(), scriptRequest(e, "echo"))
	if res.Err != nil {
		t.Fatal(res.Err)
	}
	raw := res.Output.(map[string]any)["raw"].(string)
	for _, want := range []string{`"parameters":{}`, `"dependencies":{}`, `"context":{}`, `"request_parameters":null`} {
		if !strings.Contains(raw, want) {
			t.Errorf("stdin %s lacks %s", raw, want)
		}
	}
}

func TestScriptEnvironment(t *testing.T) {
	t.Parallel()
	a := scriptAgent("env_check", "echo.py", map[string]any{"env_names": []any{
		"ENSEMBLE_AGENT", "ENSEMBLE_TURN", "ENSEMBLE_EXECUTION", "AGENT_SETTING", "HOME_LIKE", fakeKeyVar, "PATH",
	}})
	SpecOf(a).Env = map[string]string{"AGENT_SETTING": "v $(not expanded)", "HOME_LIKE": "x", "ENSEMBLE_TURN": "override attempt", fakeKeyVar: "also-secret"}
	e := testEnsemble(t, a)
	req := scriptRequest(e, "env_check")
	req.Turn, req.Execution = 7, 3
	res := (&Runner{Environ: environWithSecret}).Run(context.Background(), req)
	if res.Err != nil {
		t.Fatal(res.Err)
	}
	env := res.Output.(map[string]any)["env"].(map[string]any)
	want := map[string]any{
		"ENSEMBLE_AGENT":     "env_check",
		"ENSEMBLE_TURN":      "7",
		"ENSEMBLE_EXECUTION": "3",
		"AGENT_SETTING":      "v $(not expanded)",
		"HOME_LIKE":          "x",
		fakeKeyVar:           nil, // api_key_env variables never reach scripts
	}
	for k, v := range want {
		if env[k] != v {
			t.Errorf("%s = %#v, want %#v", k, env[k], v)
		}
	}
	if env["PATH"] == nil {
		t.Error("the parent environment (PATH) is missing")
	}
}

func TestScriptOutputs(t *testing.T) {
	t.Parallel()
	tests := []struct {
		mode    string
		want    any
		wantErr string // substring; "" = success
	}{
		{mode: "data", want: map[string]any{"count": 2.0, "items": []any{"a", "b"}}},
		{mode: "success_no_data", want: map[string]any{"success": true, "count": 3.0}},
		{mode: "fail", wantErr: "the data source is down"},
		{mode: "fail_object", wantErr: `{"code":7}`},
		{mode: "fail_exit", wantErr: "bad input (script exited with code 1: details on stderr)"},
		{mode: "exit3", wantErr: "script exited with code 3: first line\nsomething went wrong"},
		{mode: "invalid", want: `not json {"a": 1`},
		{mode: "truncated", wantErr: `stdout starts with "{" but is not valid JSON: unexpected end of JSON input (stdout: {"rows": [1, 2)`},
		{mode: "bad_array", wantErr: `stdout starts with "[" but is not valid JSON: invalid character ']'`},
		{mode: "truncated_array", wantErr: `stdout starts with "[" but is not valid JSON: unexpected end of JSON input`},
		// A log line after the JSON or before it: one rule, both fail.
		{mode: "json_then_log", wantErr: `stdout mixes JSON with other text (line 2); print logs to stderr`},
		{mode: "log_then_json", wantErr: `stdout mixes JSON with other text (line 1); print logs to stderr`},
		// Text that merely opens with a bracket, as log lines do, is text.
		{mode: "log_line", want: "[INFO] 3 rows written"},
		{mode: "progress", want: "[1/3] done"},
		{mode: "empty", want: ""},
		{mode: "number", want: 42.0},
		{mode: "crash", wantErr: "RuntimeError: kaboom"},
		// Nesting is capped: the state and the result must stay writable.
		{mode: "nest512", want: nested(512)},
		{mode: "nest513", wantErr: "output nests deeper than 512 levels"},
		{mode: "nest9990", wantErr: "output nests deeper than 512 levels"},
	}
	for _, tt := range tests {
		t.Run(tt.mode, func(t *testing.T) {
			t.Parallel()
			e := testEnsemble(t, scriptAgent("m", "modes.py", map[string]any{"mode": tt.mode}))
			res := (&Runner{}).Run(context.Background(), scriptRequest(e, "m"))
			if tt.wantErr != "" {
				if res.Err == nil || !strings.Contains(res.Err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want it to contain %q", res.Err, tt.wantErr)
				}
				return
			}
			if res.Err != nil {
				t.Fatal(res.Err)
			}
			if !reflect.DeepEqual(res.Output, tt.want) {
				t.Errorf("output %#v, want %#v", res.Output, tt.want)
			}
		})
	}
}

func TestScriptExitErrorIsTyped(t *testing.T) {
	t.Parallel()
	e := testEnsemble(t, scriptAgent("m", "modes.py", map[string]any{"mode": "exit3"}))
	res := (&Runner{}).Run(context.Background(), scriptRequest(e, "m"))
	var xe *scriptexec.ExitError
	if !errors.As(res.Err, &xe) || xe.Code != 3 || !strings.Contains(xe.Stderr, "something went wrong") {
		t.Fatalf("err = %#v, want *scriptexec.ExitError with code 3 and the stderr tail", res.Err)
	}
}

func TestScriptStderrTailIsBounded(t *testing.T) {
	t.Parallel()
	e := testEnsemble(t, scriptAgent("m", "modes.py", map[string]any{"mode": "long_stderr"}))
	res := (&Runner{}).Run(context.Background(), scriptRequest(e, "m"))
	var xe *scriptexec.ExitError
	if !errors.As(res.Err, &xe) {
		t.Fatalf("err = %v", res.Err)
	}
	if len(xe.Stderr) > scriptexec.StderrTail+8 || !strings.HasSuffix(xe.Stderr, "THE END") || strings.Contains(xe.Stderr, "HEAD") {
		t.Errorf("stderr tail of %d bytes: %.40q…%q", len(xe.Stderr), xe.Stderr, xe.Stderr[max(0, len(xe.Stderr)-20):])
	}
}

func TestScriptInterpreters(t *testing.T) {
	t.Parallel()
	tests := []struct {
		script string
		want   string // runtime reported, or the agent name echoed
	}{
		{"echo.js", "node"},
		{"shebang_tool", "shebang"},
		{"shebang_wins.py", "bash-shebang"},
		{"exec_noshebang.py", "python-by-extension"},
	}
	for _, tt := range tests {
		t.Run(tt.script, func(t *testing.T) {
			t.Parallel()
			if tt.script == "echo.js" {
				if _, err := exec.LookPath("node"); err != nil {
					if os.Getenv("ENSEMBLE_CI") != "" {
						t.Fatal("node is not installed, and ENSEMBLE_CI is set: CI installs it (.ci/run)")
					}
					t.Skip("node is not installed: the .js script cannot run")
				}
			}
			e := testEnsemble(t, scriptAgent("interp", tt.script, nil))
			res := (&Runner{}).Run(context.Background(), scriptRequest(e, "interp"))
			if res.Err != nil {
				t.Fatal(res.Err)
			}
			if got := res.Output.(map[string]any)["runtime"]; got != tt.want {
				t.Errorf("runtime %v, want %s", got, tt.want)
			}
		})
	}
	t.Run("echo.sh", func(t *testing.T) {
		t.Parallel()
		e := testEnsemble(t, scriptAgent("bash_echo", "echo.sh", nil))
		res := (&Runner{}).Run(context.Background(), scriptRequest(e, "bash_echo"))
		if res.Err != nil {
			t.Fatal(res.Err)
		}
		if got := res.Output.(map[string]any)["agent"]; got != "bash_echo" {
			t.Errorf("bash echo gave %#v", res.Output)
		}
	})
}

func TestScriptUnknownExtensionAndMissingInterpreter(t *testing.T) {
	t.Parallel()
	e := testEnsemble(t, scriptAgent("u", "unknown.txt", nil), scriptAgent("p", "echo.py", nil))
	res := (&Runner{}).Run(context.Background(), scriptRequest(e, "u"))
	var ie *scriptexec.InterpreterError
	if !errors.As(res.Err, &ie) || !strings.Contains(res.Err.Error(), "unknown.txt") {
		t.Errorf("unknown extension: err = %v", res.Err)
	}
	noPath := func() []string { return []string{"PATH=" + t.TempDir()} }
	res = (&Runner{Environ: noPath}).Run(context.Background(), scriptRequest(e, "p"))
	if !errors.As(res.Err, &ie) || !strings.Contains(res.Err.Error(), `interpreter "python3" was not found`) {
		t.Errorf("missing interpreter: err = %v", res.Err)
	}
}

func TestScriptNeverReadingStdin(t *testing.T) {
	t.Parallel()
	e := testEnsemble(t, scriptAgent("n", "no_stdin.sh", nil))
	req := scriptRequest(e, "n")
	// Far more than a pipe buffer, so the write cannot complete.
	req.Context = map[string]any{"big": strings.Repeat("y", 4<<20)}
	res := (&Runner{}).Run(context.Background(), req)
	if res.Err != nil {
		t.Fatal(res.Err)
	}
	if res.Output != "ignored stdin" {
		t.Errorf("output %#v", res.Output)
	}
}

// processGone reports whether pid no longer runs (a zombie counts as gone:
// in a container nobody may reap it).
func processGone(pid int) bool {
	if err := syscall.Kill(pid, 0); err != nil {
		return true
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return true
	}
	s := string(b)
	i := strings.LastIndex(s, ") ")
	return i >= 0 && len(s) > i+2 && (s[i+2] == 'Z' || s[i+2] == 'X')
}

func readPid(t *testing.T, path string) int {
	t.Helper()
	var b []byte
	var err error
	// Generous: a script can take seconds to start on a busy machine.
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); {
		if b, err = os.ReadFile(path); err == nil && len(strings.TrimSpace(string(b))) > 0 {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		t.Fatalf("pid file %s: %q %v", path, b, err)
	}
	return pid
}

func assertGone(t *testing.T, pid int) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !processGone(pid) {
		if time.Now().After(deadline) {
			_ = syscall.Kill(pid, syscall.SIGKILL)
			t.Fatalf("grandchild %d is still running", pid)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestScriptTimeoutKillsProcessGroup(t *testing.T) {
	t.Parallel()
	pidFile := filepath.Join(t.TempDir(), "pid")
	a := scriptAgent("hang", "hang.sh", nil)
	SpecOf(a).Env = map[string]string{"PIDFILE": pidFile}
	a.Timeout = 3 * time.Second // long enough to write the pid file on a busy machine
	e := testEnsemble(t, a)
	start := time.Now()
	res := (&Runner{}).Run(context.Background(), scriptRequest(e, "hang"))
	// The script sleeps 300 s: a minute means the timeout killed it (no
	// tighter bound: CI is a busy machine).
	if took := time.Since(start); took > time.Minute {
		t.Errorf("took %s", took)
	}
	var te *scriptexec.TimeoutError
	if !errors.As(res.Err, &te) || !errors.Is(res.Err, context.DeadlineExceeded) {
		t.Fatalf("err = %v, want a timeout", res.Err)
	}
	if msg := res.Err.Error(); !strings.Contains(msg, "timeout") || !strings.Contains(msg, "3s") {
		t.Errorf("message %q lacks timeout and the duration", msg)
	}
	assertGone(t, readPid(t, pidFile))
}

func TestScriptCancellationKillsProcessGroup(t *testing.T) {
	t.Parallel()
	pidFile := filepath.Join(t.TempDir(), "pid")
	a := scriptAgent("hang", "hang.sh", nil)
	SpecOf(a).Env = map[string]string{"PIDFILE": pidFile}
	e := testEnsemble(t, a)
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		readPid(t, pidFile)
		cancel()
	}()
	res := (&Runner{}).Run(ctx, scriptRequest(e, "hang"))
	if !errors.Is(res.Err, context.Canceled) || !strings.Contains(res.Err.Error(), "cancelled") {
		t.Fatalf("err = %v, want cancelled", res.Err)
	}
	assertGone(t, readPid(t, pidFile))

	// Already cancelled: nothing starts.
	res = (&Runner{}).Run(ctx, scriptRequest(e, "hang"))
	if !errors.Is(res.Err, context.Canceled) {
		t.Errorf("err = %v", res.Err)
	}
}

func TestScriptRunDeadlineIsATimeout(t *testing.T) {
	t.Parallel()
	pidFile := filepath.Join(t.TempDir(), "pid")
	a := scriptAgent("hang", "hang.sh", nil)
	SpecOf(a).Env = map[string]string{"PIDFILE": pidFile}
	e := testEnsemble(t, a)
	// Long enough for the script to write its pid file on a busy machine.
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	res := (&Runner{}).Run(ctx, scriptRequest(e, "hang"))
	if !errors.Is(res.Err, context.DeadlineExceeded) || !strings.Contains(res.Err.Error(), "timeout") {
		t.Fatalf("err = %v", res.Err)
	}
	assertGone(t, readPid(t, pidFile))
}

func TestScriptLeftoverProcessesAreKilled(t *testing.T) {
	t.Parallel()
	pidFile := filepath.Join(t.TempDir(), "pid")
	a := scriptAgent("orphan", "orphan.sh", nil)
	SpecOf(a).Env = map[string]string{"PIDFILE": pidFile}
	e := testEnsemble(t, a)
	start := time.Now()
	res := (&Runner{}).Run(context.Background(), scriptRequest(e, "orphan"))
	if res.Err != nil {
		t.Fatal(res.Err)
	}
	// The grandchild sleeps 300 s: a minute means the result did not wait for it.
	if took := time.Since(start); took > time.Minute {
		t.Errorf("a grandchild holding stdout delayed the result by %s", took)
	}
	if !reflect.DeepEqual(res.Output, map[string]any{"done": true}) {
		t.Errorf("output %#v", res.Output)
	}
	assertGone(t, readPid(t, pidFile))
}

func TestScriptOutputFlood(t *testing.T) {
	t.Parallel()
	e := testEnsemble(t, scriptAgent("flood", "flood.py", nil))
	start := time.Now()
	res := (&Runner{}).Run(context.Background(), scriptRequest(e, "flood"))
	var oe *scriptexec.OutputLimitError
	if !errors.As(res.Err, &oe) || !strings.Contains(res.Err.Error(), "output exceeds 10 MiB") {
		t.Fatalf("err = %v", res.Err)
	}
	if took := time.Since(start); took > 2*time.Minute {
		t.Errorf("took %s", took)
	}
}

func TestScriptShellMetacharactersStayData(t *testing.T) {
	t.Parallel()
	tmp := t.TempDir()
	target := filepath.Join(tmp, "pwned")
	input := "$(touch " + target + "); rm -rf x `touch " + target + "` | cat > " + target
	tests := []struct {
		mode string
		want any
	}{
		{"metachar", map[string]any{"echo": input, "cmd": "$(touch " + target + ")"}},
		{"metachar_text", "`touch " + target + "`; $(rm -rf /nonexistent) | && >"},
	}
	for _, tt := range tests {
		t.Run(tt.mode, func(t *testing.T) {
			t.Parallel()
			a := scriptAgent("m", "modes.py", map[string]any{"mode": tt.mode, "target": target})
			SpecOf(a).Env = map[string]string{"INJECT": "$(touch " + target + ")"}
			e := testEnsemble(t, a)
			req := scriptRequest(e, "m")
			req.Input = input
			req.Dependencies = map[string]any{"prev": input}
			res := (&Runner{}).Run(context.Background(), req)
			if res.Err != nil {
				t.Fatal(res.Err)
			}
			if !reflect.DeepEqual(res.Output, tt.want) {
				t.Errorf("output %#v, want %#v", res.Output, tt.want)
			}
			if res.InputData.(map[string]any)["input"] != input {
				t.Errorf("input_data changed the input: %#v", res.InputData)
			}
			if _, err := os.Stat(target); err == nil {
				t.Fatal("agent data was executed by a shell")
			}
		})
	}
}

func TestScriptEnv(t *testing.T) {
	t.Parallel()
	e := testEnsemble(t)
	base := []string{"A=1", "B=2", fakeKeyVar + "=secret", "PATH=/bin"}
	got := scriptexec.ScriptEnv(base, e, map[string]string{"B": "3", "C": "4", fakeKeyVar: "again"})
	want := []string{"A=1", "PATH=/bin", "B=3", "C=4"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("ScriptEnv = %q, want %q", got, want)
	}
	if got := scriptexec.ScriptEnv(base, nil, nil); !reflect.DeepEqual(got, base) {
		t.Errorf("ScriptEnv(nil ensemble) = %q", got)
	}
}

// TestScriptStderrIsKeptOnSuccess: what a script prints on stderr is kept
// even when it succeeds, bounded to its last scriptexec.StderrTail bytes, cut on a
// UTF-8 boundary and marked with "…"; the failure path keeps the same tail.
func TestScriptStderrIsKeptOnSuccess(t *testing.T) {
	t.Parallel()
	tests := []struct {
		mode, want string
		check      func(t *testing.T, stderr string)
	}{
		{mode: "stderr_ok", want: "reading the input\nwrote 3 rows"},
		{mode: "data", want: ""},
		{mode: "exit3", want: "first line\nsomething went wrong"},
		{mode: "long_stderr_ok", check: func(t *testing.T, s string) {
			if len(s) > scriptexec.StderrTail+len("…") || !strings.HasPrefix(s, "…é") || !strings.HasSuffix(s, "éTHE END") ||
				!utf8.ValidString(s) || strings.Contains(s, "HEAD") {
				t.Errorf("stderr tail of %d bytes: %.40q…%q", len(s), s, s[max(0, len(s)-20):])
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.mode, func(t *testing.T) {
			t.Parallel()
			e := testEnsemble(t, scriptAgent("m", "modes.py", map[string]any{"mode": tt.mode}))
			res := (&Runner{}).Run(context.Background(), scriptRequest(e, "m"))
			if tt.check != nil {
				tt.check(t, res.Stderr)
			} else if res.Stderr != tt.want {
				t.Errorf("stderr %q, want %q", res.Stderr, tt.want)
			}
		})
	}
}

// An output that fails the agent's output_schema fails the execution with
// the validation errors (docs/format.md#output-schemas); one that satisfies
// it is the output.
func TestScriptOutputSchema(t *testing.T) {
	t.Parallel()
	schema, err := ensemble.CompileOutputSchema(map[string]any{
		"type":     "object",
		"required": []any{"count"},
		"properties": map[string]any{
			"count": map[string]any{"type": "integer", "minimum": 3.0},
			"items": map[string]any{"type": "array", "items": map[string]any{"type": "string"}},
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		mode    string
		wantErr string // "" = success
	}{
		{mode: "success_no_data"},
		{mode: "data", wantErr: "the output does not match output_schema: at '/count': minimum: got 2, want 3"},
		{mode: "number", wantErr: "the output does not match output_schema: at '/': got number, want object"},
		{mode: "fail", wantErr: "the data source is down"}, // a failure stays the script's
	}
	for _, tt := range tests {
		t.Run(tt.mode, func(t *testing.T) {
			t.Parallel()
			a := scriptAgent("m", "modes.py", map[string]any{"mode": tt.mode})
			a.OutputSchema = schema
			e := testEnsemble(t, a)
			res := (&Runner{}).Run(context.Background(), scriptRequest(e, "m"))
			switch {
			case tt.wantErr == "" && res.Err != nil:
				t.Fatal(res.Err)
			case tt.wantErr != "" && (res.Err == nil || res.Err.Error() != tt.wantErr):
				t.Fatalf("err = %v, want %q", res.Err, tt.wantErr)
			}
			var se *runners.SchemaError
			if tt.mode != "fail" && tt.wantErr != "" && !errors.As(res.Err, &se) {
				t.Errorf("err is %T, want a *runners.SchemaError", res.Err)
			}
		})
	}
}
