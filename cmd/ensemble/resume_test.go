package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/ensemble-run/ensemble/durable"
	"github.com/ensemble-run/ensemble/internal/fakemodel"
	"github.com/ensemble-run/ensemble/internal/mcptest"
	"github.com/ensemble-run/ensemble/internal/startup"
	"github.com/ensemble-run/ensemble/state"
	"github.com/ensemble-run/ensemble/store"
)

// asCLI, set to 1 in its environment, makes the test binary the ensemble
// command: the tests that signal a real process run it, and the command
// is not built a second time.
const asCLI = "ENSEMBLE_TEST_AS_CLI"

func TestMain(m *testing.M) {
	startup.Restore()
	mcptest.Main() // the test binary is also the tests' stdio MCP server
	if os.Getenv(asCLI) == "1" {
		main() // exits
	}
	widenParallel()
	os.Exit(m.Run())
}

// cliCommand runs the test binary as the ensemble command (asCLI set in its
// environment, with extra variables after it): without asCLI, the binary
// would run this package's tests again, this test among them, forever.
func cliCommand(t *testing.T, env []string, args ...string) *exec.Cmd {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe, args...)
	cmd.Env = append(append(os.Environ(), asCLI+"=1"), env...)
	return cmd
}

const (
	durableDir = "testdata/durable/"
	fakeKey    = "sk-fake-3b1f0c9e-never-in-a-state-file"
	visible    = "visible-8d2a"
)

// binaryCmd prepares the binary with a controlled environment: a fake API
// key in the variable the ensemble's profile names, and the variables that
// make testdata/durable/scripts/step.sh block once in turn blockTurn.
func binaryCmd(t *testing.T, dir string, blockTurn int, args ...string) (*exec.Cmd, *bytes.Buffer, *bytes.Buffer) {
	cmd := cliCommand(t, []string{"ENSEMBLE_PROFILES=", "ENSEMBLE_TEST_FAKE_KEY=" + fakeKey, "ENSEMBLE_TEST_VISIBLE=" + visible,
		"DURABLE_DIR=" + dir, "BLOCK_TURN=" + strconv.Itoa(blockTurn)}, args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	return cmd, &stdout, &stderr
}

func exitCode(t *testing.T, err error) int {
	t.Helper()
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		t.Fatal(err)
	}
	if ee != nil {
		return ee.ExitCode()
	}
	return 0
}

// comparableResult is a result as JSON without what depends on the clock.
func comparableResult(t *testing.T, data []byte) string {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(data, &m); err != nil {
		t.Fatalf("not a result: %v\n%s", err, data)
	}
	delete(m, "duration_seconds")
	return dropTimings(t, m, "conversation_history")
}

// dropLatency removes the latency_ms of every model request under v (an
// LLM record's model_requests): the time a request took varies by run.
func dropLatency(v any) {
	switch v := v.(type) {
	case map[string]any:
		delete(v, "latency_ms")
		for _, c := range v {
			dropLatency(c)
		}
	case []any:
		for _, c := range v {
			dropLatency(c)
		}
	}
}

func dropTimings(t *testing.T, m map[string]any, historyKey string) string {
	t.Helper()
	hist, _ := m[historyKey].([]any)
	for _, r := range hist {
		rec := r.(map[string]any)
		delete(rec, "execution_time")
		delete(rec, "timestamp")
		dropLatency(rec["model_requests"])
	}
	b, _ := json.MarshalIndent(m, "", " ")
	return string(b)
}

type stateFile struct {
	raw              []byte
	CompletionReason string         `json:"completion_reason"`
	State            map[string]any `json:"state"`
}

// readState reads the run of a state file: a JSON state file as it is, the
// one run of a state database as state export prints it. raw is what the
// file holds: the JSON, or the export and the database's bytes.
func readState(t *testing.T, path string) *stateFile {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	text := raw
	if bytes.HasPrefix(raw, []byte(store.Header)) {
		text = exportState(t, path, "")
		raw = append(append([]byte(nil), text...), raw...)
	}
	var sf stateFile
	if err := json.Unmarshal(text, &sf); err != nil {
		t.Fatalf("the state file does not parse: %v\n%s", err, text)
	}
	sf.raw = raw
	return &sf
}

// exportState is a run of a state database (id "": its one run) in the
// JSON state file format, read in this process as state export reads it.
func exportState(t *testing.T, path, id string) []byte {
	t.Helper()
	sf, _, err := durable.Load(path, id)
	if err != nil {
		t.Fatal(err)
	}
	b, err := state.Marshal(sf)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func (sf *stateFile) turn() int { return int(sf.State["turn_count"].(float64)) }

func (sf *stateFile) comparable(t *testing.T) string {
	return dropTimings(t, sf.State, "conversation_history")
}

// noSecrets checks that the fake key is nowhere in a state file, while the
// seed's dump of its ENSEMBLE_* variables is (so the check means something).
func noSecrets(t *testing.T, sf *stateFile) {
	t.Helper()
	if bytes.Contains(sf.raw, []byte(fakeKey)) || bytes.Contains(sf.raw, []byte("sk-fake")) {
		t.Fatalf("the state file holds the API key:\n%s", sf.raw)
	}
	if !bytes.Contains(sf.raw, []byte(visible)) {
		t.Fatalf("the state file lacks the seed's environment dump:\n%s", sf.raw)
	}
}

var (
	referenceOnce                  sync.Once
	referenceResult, referenceSt   string
	referenceFailure               string
	referenceTurns, referenceCount = 8, map[string]any{"seed": 1.0, "ping": 3.0, "pong": 3.0, "judge": 3.0}
)

// reference is an uninterrupted run of testdata/durable with --state.
func reference(t *testing.T) (result, st string) {
	t.Helper()
	referenceOnce.Do(func() {
		dir := t.TempDir()
		sp := filepath.Join(dir, "run.state")
		cmd, stdout, stderr := binaryCmd(t, "", 0, "run", durableDir+"ensemble.yaml", "--responses", durableDir+"responses.yaml",
			"--state", sp, "--output", "json")
		if code := exitCode(t, cmd.Run()); code != 0 {
			referenceFailure = fmt.Sprintf("reference run: exit %d: %s", code, stderr)
			return
		}
		sf := readState(t, sp)
		noSecrets(t, sf)
		if sf.CompletionReason != "completed" || sf.turn() != referenceTurns ||
			!reflect.DeepEqual(sf.State["agent_execution_count"], referenceCount) {
			referenceFailure = fmt.Sprintf("reference run: %s after %d turns, %v", sf.CompletionReason, sf.turn(), sf.State["agent_execution_count"])
			return
		}
		referenceResult, referenceSt = comparableResult(t, stdout.Bytes()), sf.comparable(t)
	})
	if referenceFailure != "" {
		t.Fatal(referenceFailure)
	}
	return referenceResult, referenceSt
}

// alive reports whether pid is a process that has not exited (a zombie
// waiting for a parent that does not reap it counts as gone).
func alive(pid int) bool {
	if syscall.Kill(pid, 0) != nil {
		return false
	}
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return !errors.Is(err, os.ErrNotExist)
	}
	// pid (comm) S ...: the state follows the last ')'.
	s := string(stat)
	if i := strings.LastIndexByte(s, ')'); i >= 0 && i+2 < len(s) {
		return s[i+2] != 'Z'
	}
	return true
}

func poll(t *testing.T, what string, deadline time.Duration, ok func() bool) {
	t.Helper()
	end := time.Now().Add(deadline)
	for !ok() {
		if time.Now().After(end) {
			t.Fatalf("gave up waiting %s for %s", deadline, what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// A run interrupted in its 4th turn (by SIGINT, or by SIGKILL with no
// chance to clean up) and then resumed ends exactly as an uninterrupted
// run: completed turns are not run again, the interrupted one is, and the
// injected responses continue where they were.
func TestInterruptedRunResumes(t *testing.T) {
	t.Parallel()
	wantResult, wantState := reference(t)
	for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGKILL} {
		t.Run(sig.String(), func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			sp := filepath.Join(dir, "run.state")
			cmd, _, stderr := binaryCmd(t, dir, 4, "run", durableDir+"ensemble.yaml", "--responses", durableDir+"responses.yaml",
				"--state", sp, "--output", "json")
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			exited := make(chan error, 1)
			go func() { exited <- cmd.Wait() }()
			t.Cleanup(func() { cmd.Process.Kill() })

			// Wait until the script blocks in turn 4.
			pidFile := filepath.Join(dir, "pids")
			poll(t, "the script to block", 60*time.Second, func() bool {
				select {
				case err := <-exited:
					t.Fatalf("the run ended before blocking: %v\n%s", err, stderr)
				default:
				}
				_, err := os.Stat(pidFile)
				return err == nil
			})
			var script, child int
			b, _ := os.ReadFile(pidFile)
			if _, err := fmt.Sscan(string(b), &script, &child); err != nil {
				t.Fatalf("pid file %q: %v", b, err)
			}
			t.Cleanup(func() {
				syscall.Kill(-script, syscall.SIGKILL) // the script leads its process group
				syscall.Kill(child, syscall.SIGKILL)
			})
			if sf := readState(t, sp); sf.turn() != 3 || sf.CompletionReason != "" {
				t.Fatalf("while turn 4 runs, the file holds turn %d, %q", sf.turn(), sf.CompletionReason)
			}

			if err := cmd.Process.Signal(sig); err != nil {
				t.Fatal(err)
			}
			var err error
			select {
			case err = <-exited:
			case <-time.After(60 * time.Second):
				t.Fatal("the run did not end after the signal")
			}
			sf := readState(t, sp)
			if sf.turn() != 3 {
				t.Fatalf("after %v the file holds turn %d", sig, sf.turn())
			}
			noSecrets(t, sf)
			switch sig {
			case syscall.SIGINT:
				if code := exitCode(t, err); code != 130 {
					t.Fatalf("exit %d after SIGINT, want 130: %s", code, stderr)
				}
				if sf.CompletionReason != "cancelled" {
					t.Fatalf("completion_reason %q", sf.CompletionReason)
				}
				// The script and the process it started were killed.
				for _, pid := range []int{script, child} {
					poll(t, fmt.Sprintf("process %d to be gone", pid), 30*time.Second, func() bool { return !alive(pid) })
				}
			case syscall.SIGKILL:
				if sf.CompletionReason != "" {
					t.Fatalf("completion_reason %q after SIGKILL", sf.CompletionReason)
				}
				// Nothing cleaned up after the killed run; do it here.
				syscall.Kill(-script, syscall.SIGKILL)
			}

			resume, stdout, stderr := binaryCmd(t, dir, 4, "resume", sp, "--output", "json")
			if code := exitCode(t, resume.Run()); code != 0 {
				t.Fatalf("resume: exit %d: %s", code, stderr)
			}
			if got := comparableResult(t, stdout.Bytes()); got != wantResult {
				t.Fatalf("the resumed result differs from an uninterrupted run's:\n%s\nwant\n%s", got, wantResult)
			}
			sf = readState(t, sp)
			if got := sf.comparable(t); got != wantState || sf.CompletionReason != "completed" {
				t.Fatalf("the final state (%q) differs from an uninterrupted run's:\n%s\nwant\n%s", sf.CompletionReason, got, wantState)
			}
			noSecrets(t, sf)

			// Each script execution ran once, but for the one of the
			// interrupted turn, which ran again.
			log, _ := os.ReadFile(filepath.Join(dir, "log"))
			want := "seed 1 1\nping 1 2\npong 1 3\nping 2 4\nping 2 4\npong 2 5\nping 3 6\npong 3 7\n"
			if string(log) != want {
				t.Fatalf("script executions:\n%s\nwant\n%s", log, want)
			}
		})
	}
}

// copyDurable copies testdata/durable into a fresh directory, to change it.
func copyDurable(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	for _, name := range []string{"ensemble.yaml", "responses.yaml", "scripts/step.sh"} {
		b, err := os.ReadFile(durableDir + name)
		if err != nil {
			t.Fatal(err)
		}
		os.MkdirAll(filepath.Dir(filepath.Join(dir, name)), 0o755)
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func appendTo(t *testing.T, path, text string) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString(text)
	f.Close()
}

func TestResumeRefusesChangedFiles(t *testing.T) {
	t.Parallel()
	dir := copyDurable(t)
	ens, resp, sp := filepath.Join(dir, "ensemble.yaml"), filepath.Join(dir, "responses.yaml"), filepath.Join(dir, "run.state")
	o := ensembleCmd(t, "", "run", ens, "--responses", resp, "--state", sp, "--max-turns", "5", "--output", "json")
	if o.code != 3 {
		t.Fatalf("exit %d: %s", o.code, o.stderr)
	}
	// The saved limit holds on resume: nothing more runs.
	o = ensembleCmd(t, "", "resume", sp, "--output", "json")
	if o.code != 3 || !strings.Contains(o.stdout, `"turn_count": 5`) {
		t.Fatalf("exit %d: %s %s", o.code, o.stdout, o.stderr)
	}

	appendTo(t, ens, "\n# an edit\n")
	o = ensembleCmd(t, "", "resume", sp, "--output", "json")
	if o.code != 2 || o.stdout != "" || !strings.Contains(o.stderr, "ensemble file "+ens+" has changed") || !strings.Contains(o.stderr, "--force") {
		t.Fatalf("a changed ensemble file: exit %d: %q %q", o.code, o.stdout, o.stderr)
	}
	if readState(t, sp).turn() != 5 {
		t.Fatal("a refused resume touched the state")
	}
	appendTo(t, resp, "\n# an edit\n")
	o = ensembleCmd(t, "", "resume", sp, "--output", "json")
	if o.code != 2 || !strings.Contains(o.stderr, "ensemble file "+ens) || !strings.Contains(o.stderr, "responses file "+resp+" has changed") {
		t.Fatalf("both changed: exit %d: %q", o.code, o.stderr)
	}

	// --force goes on (here with a raised turn limit) and says so.
	o = ensembleCmd(t, "", "resume", sp, "--force", "--max-turns", "20", "--output", "json")
	if o.code != 0 || !strings.Contains(o.stderr, "resuming anyway") || !strings.Contains(o.stdout, `"turn_count": 8`) {
		t.Fatalf("--force: exit %d: %s %s", o.code, o.stdout, o.stderr)
	}
	// The state now records the files as they are.
	o = ensembleCmd(t, "", "resume", sp, "--output", "json")
	if o.code != 0 || o.stderr != "" || !strings.Contains(o.stdout, `"completion_reason": "completed"`) {
		t.Fatalf("after --force: exit %d: %s", o.code, o.stderr)
	}
}

func TestResumeRejectsBadStateFiles(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	sp := filepath.Join(dir, "good.state")
	o := ensembleCmd(t, "", "run", durableDir+"ensemble.yaml", "--responses", durableDir+"responses.yaml", "--state", sp, "--output", "json")
	if o.code != 0 {
		t.Fatalf("exit %d: %s", o.code, o.stderr)
	}
	good, _ := os.ReadFile(sp) // a database
	if !bytes.HasPrefix(good, []byte(store.Header)) {
		t.Fatalf("--state %s did not make a database", sp)
	}
	goodJSON := exportState(t, sp, "")
	garbled := append([]byte(nil), good...)
	for i := 100; i < len(garbled); i += 3 {
		garbled[i] = 'x'
	}
	headerByte := func(at int, b byte) string { // good with one byte of its header changed
		d := append([]byte(nil), good...)
		d[at] = b
		return string(d)
	}
	for _, tc := range []struct{ name, data, msg string }{
		{"garbage", "\x00\x01 not json", "not a text file (a NUL byte at offset 0)"},
		{"not json", "{\x01 not json", "not valid JSON"},
		{"truncated", string(goodJSON[:len(goodJSON)*2/3]), "corrupt or truncated"},
		{"empty", "", "the file is empty: it holds no runs (a run stopped as it created the file saved none; run --state with this file starts a run in it)"},
		{"unknown version", strings.Replace(string(goodJSON), `"version": 1,`, `"version": 7,`, 1), "unknown state file version 7"},
		{"not a state file", `{"ensemble": "x"}`, "not an ensemble state file"},
		{"truncated database", string(good[:len(good)/2]), "the database is corrupt or truncated"},
		{"garbled database", string(garbled), "the database is corrupt or truncated"},
		{"database header only", store.Header, "the database is corrupt or truncated"},
		// Bytes reserved at the end of each page: SQLite reads on, and
		// found the pages malformed only when resume wrote.
		{"database reserving page bytes", headerByte(20, 255), "the database is corrupt or truncated (database disk image is malformed: its header reserves 255 bytes"},
		// A write version above 2: SQLite opens the file read-only.
		{"database of write version 5", headerByte(18, 5), "the database is corrupt or truncated (database disk image is malformed: its header's file format versions are 5 and"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			path := filepath.Join(dir, strings.ReplaceAll(tc.name, " ", "-")+".state")
			os.WriteFile(path, []byte(tc.data), 0o600)
			// What resume refuses, the commands that read refuse alike.
			for _, args := range [][]string{{"resume", path}, {"state", "show", path}, {"state", "list", path}, {"state", "export", path}} {
				o := ensembleCmd(t, "", args...)
				if o.code != 2 || o.stdout != "" || !strings.Contains(o.stderr, "state file "+path+": ") || !strings.Contains(o.stderr, tc.msg) {
					t.Errorf("%s: exit %d, stderr %q, want exit 2 and %q", args[:len(args)-1], o.code, o.stderr, tc.msg)
				}
			}
		})
	}
	emptyFile := filepath.Join(dir, "killed-as-made.db") // what a run killed as it made its database may leave
	if err := os.WriteFile(emptyFile, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args []string
		msg  string
	}{
		{[]string{"resume", filepath.Join(dir, "nope.state")}, "no such file"},
		{[]string{"resume", dir}, "is a directory"},
		{[]string{"resume"}, "resume needs one STATE file"},
		{[]string{"run", durableDir + "ensemble.yaml", "--state", filepath.Join(dir, "missing", "s")}, "--state: state file " + filepath.Join(dir, "missing", "s") + ": cannot create it: the folder " + filepath.Join(dir, "missing") + " does not exist"},
		{[]string{"state", "list", emptyFile}, "state file " + emptyFile + ": the file is empty: it holds no runs"},
		// An empty file, a missing one and a folder are no JSON state
		// file, with --run-id too.
		{[]string{"state", "show", emptyFile, "--run-id", "r"}, "state file " + emptyFile + ": the file is empty: it holds no runs"},
		{[]string{"state", "export", emptyFile, "--run-id", "r"}, "state file " + emptyFile + ": the file is empty: it holds no runs"},
		{[]string{"resume", emptyFile, "--run-id", "r"}, "state file " + emptyFile + ": the file is empty: it holds no runs"},
		{[]string{"state", "show", filepath.Join(dir, "nope.db"), "--run-id", "r"}, "state file " + filepath.Join(dir, "nope.db") + ": no such file"},
		{[]string{"resume", filepath.Join(dir, "nope.db"), "--run-id", "r"}, "state file " + filepath.Join(dir, "nope.db") + ": no such file"},
		{[]string{"state", "export", dir, "--run-id", "r"}, "state file " + dir + ": is a directory"},
	} {
		o := ensembleCmd(t, "", tc.args...)
		if o.code != 2 || !strings.Contains(o.stderr, tc.msg) {
			t.Errorf("%v: exit %d, stderr %q, want %q", tc.args, o.code, o.stderr, tc.msg)
		}
	}
}

// resumable runs testdata/durable (copied) for three turns with --state,
// stopping on --max-turns: a run to resume.
func resumable(t *testing.T) (dir, ens, sp string) {
	t.Helper()
	dir = copyDurable(t)
	ens, sp = filepath.Join(dir, "ensemble.yaml"), filepath.Join(dir, "run.state")
	o := ensembleCmd(t, "", "run", ens, "--responses", filepath.Join(dir, "responses.yaml"), "--state", sp, "--max-turns", "3", "--output", "json")
	if o.code != 3 {
		t.Fatalf("exit %d: %s", o.code, o.stderr)
	}
	return dir, ens, sp
}

// resume takes the output flags of run: its JSON lines start after the
// saved turns (run_started says which) and their counts match the rest of
// the result; its report covers the whole run and says it was resumed.
func TestResumeTakesTheOutputFlagsOfRun(t *testing.T) {
	t.Parallel()
	dir, _, sp := resumable(t)
	report := filepath.Join(dir, "run.md")
	o := ensembleCmd(t, "", "resume", sp, "--max-turns", "20", "--output", "jsonl", "--stream", "--report", report)
	if o.code != 0 {
		t.Fatalf("exit %d: %s", o.code, o.stderr)
	}
	r := parseJSONL(t, o.stdout)
	if r.events[0]["turn"] != 3.0 || r.counts["turn_completed"] != 5 {
		t.Fatalf("run_started %v, counts %v", r.events[0], r.counts)
	}
	if r.result.CompletionReason != "completed" || r.result.TurnCount != referenceTurns || len(r.result.ConversationHistory) != 10 {
		t.Fatalf("%s after %d turns, %d executions", r.result.CompletionReason, r.result.TurnCount, len(r.result.ConversationHistory))
	}
	b, err := os.ReadFile(report)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"## Turn 1\n", "## Turn 8\n", "| resumed | after turn 3, at ", "| turns | 8 |"} {
		if !strings.Contains(string(b), want) {
			t.Errorf("the report lacks %q:\n%s", want, b)
		}
	}
}

// A report is written in place only when the run ends: a refused resume,
// or a run that cannot start, leaves the path as it was.
func TestReportIsWrittenOnlyWhenTheRunEnds(t *testing.T) {
	t.Parallel()
	dir, ens, sp := resumable(t)
	report := filepath.Join(dir, "run.md")
	if err := os.WriteFile(report, []byte("an earlier report\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	appendTo(t, ens, "\n# an edit\n")
	o := ensembleCmd(t, "", "resume", sp, "--report", report)
	if o.code != 2 || !strings.Contains(o.stderr, "has changed") {
		t.Fatalf("exit %d: %s", o.code, o.stderr)
	}
	if b, _ := os.ReadFile(report); string(b) != "an earlier report\n" {
		t.Fatalf("a refused resume changed the report to %q", b)
	}
	fresh := filepath.Join(dir, "fresh.md")
	o = ensembleCmd(t, "", "run", ens, "--state", filepath.Join(dir, "missing", "s"), "--report", fresh)
	if o.code != 2 || !strings.Contains(o.stderr, "--state") {
		t.Fatalf("exit %d: %s", o.code, o.stderr)
	}
	if _, err := os.Stat(fresh); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("a run that did not start left a report: %v", err)
	}
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if strings.Contains(e.Name(), ".tmp-") {
			t.Errorf("left behind: %s", e.Name())
		}
	}
	o = ensembleCmd(t, "", "run", ens, "--report", dir)
	if o.code != 2 || !strings.Contains(o.stderr, "is a directory") {
		t.Fatalf("--report DIR: exit %d: %s", o.code, o.stderr)
	}
}

// When the ensemble file of a saved run no longer loads, resume says which
// run it could not resume and why, before the loader's own messages.
func TestResumeOfAnEnsembleThatNoLongerLoads(t *testing.T) {
	t.Parallel()
	_, ens, sp := resumable(t)
	appendTo(t, ens, "\nbogus: 1\n")
	o := ensembleCmd(t, "", "resume", sp)
	for _, want := range []string{"cannot resume " + sp + ": the ensemble file " + ens + " has changed since the state was saved, and no longer loads:\n",
		`unknown top-level key "bogus"`} {
		if o.code != 2 || !strings.Contains(o.stderr, want) {
			t.Errorf("exit %d, stderr lacks %q:\n%s", o.code, want, o.stderr)
		}
	}
	if err := os.Remove(ens); err != nil {
		t.Fatal(err)
	}
	o = ensembleCmd(t, "", "resume", sp)
	if want := "cannot resume " + sp + ": the ensemble file of the saved run cannot be read:\n"; o.code != 2 || !strings.Contains(o.stderr, want) {
		t.Errorf("exit %d, stderr lacks %q:\n%s", o.code, want, o.stderr)
	}
}

// An LLM agent's conversation is in the state: resumed between its
// executions, in a new process with a new runner, the agent sends the model
// exactly what it sends in an uninterrupted run, and the run ends the same.
// The key is in neither the state nor the result.
func TestLLMConversationSurvivesResume(t *testing.T) {
	t.Parallel()
	srv := fakemodel.New(t, func(r fakemodel.Request) fakemodel.Reply {
		// The reply depends on the whole conversation so far.
		n := len(r.Messages)
		return fakemodel.Reply{Text: fmt.Sprintf("draft %d after %d messages", (n+1)/2, n), Usage: &fakemodel.Usage{In: n, Out: 3}}
	})
	// calls are the message lists the model was sent, from request from on.
	calls := func(from int) []string {
		var out []string
		for _, r := range srv.Requests()[from:] {
			msgs, _ := json.Marshal(r.Body["messages"])
			out = append(out, string(msgs))
		}
		return out
	}
	const key = "sk-llm-resume-5e1d"
	dir := t.TempDir()
	files := map[string]string{
		"ensemble.yaml": `name: llm-resume
input: write the notes
models:
  m:
    provider: openai
    model: test-model
    base_url: ${TEST_LLM_URL}
    api_key_env: TEST_LLM_KEY
    system_prompt: Be brief.
agents:
  - name: brief
    script: review.sh
  - name: writer
    model_profile: m
    prompt: Revise after each review.
    dependencies:
      - brief
      - agent_name: reviewer
        requires_all: false
    conversation: {max_turns: 3}
  - name: reviewer
    script: review.sh
    dependencies: [writer]
    conversation: {max_turns: 3}
`,
		"review.sh": "#!/bin/sh\necho \"review $ENSEMBLE_EXECUTION\"\n",
	}
	for name, body := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	runCLI := func(args ...string) outcome {
		return ensembleEnv(t, map[string]string{"TEST_LLM_URL": srv.URL(), "TEST_LLM_KEY": key}, args...)
	}
	ens := filepath.Join(dir, "ensemble.yaml")

	whole := runCLI("run", ens, "--output", "json")
	if whole.code != 0 {
		t.Fatalf("exit %d: %s", whole.code, whole.stderr)
	}
	wholeCalls := calls(0)
	if len(wholeCalls) != 3 {
		t.Fatalf("%d model requests, want 3", len(wholeCalls))
	}

	sp := filepath.Join(dir, "run.state")
	if o := runCLI("run", ens, "--state", sp, "--max-turns", "3", "--output", "json"); o.code != 3 {
		t.Fatalf("exit %d: %s", o.code, o.stderr)
	}
	raw := readState(t, sp).raw
	if !bytes.Contains(raw, []byte(`"memory"`)) || !bytes.Contains(raw, []byte("draft 1 after 2 messages")) {
		t.Fatalf("the state lacks the writer's conversation:\n%s", raw)
	}
	resumed := runCLI("resume", sp, "--max-turns", "20", "--output", "json")
	if resumed.code != 0 {
		t.Fatalf("resume: exit %d: %s", resumed.code, resumed.stderr)
	}
	split := calls(len(wholeCalls))
	if strings.Join(split, "\n") != strings.Join(wholeCalls, "\n") {
		t.Fatalf("the model was sent, across the resume:\n%s\nwant, as in one run:\n%s", strings.Join(split, "\n"), strings.Join(wholeCalls, "\n"))
	}
	if got, want := comparableResult(t, []byte(resumed.stdout)), comparableResult(t, []byte(whole.stdout)); got != want {
		t.Fatalf("the resumed result differs:\n%s\nwant\n%s", got, want)
	}
	raw = readState(t, sp).raw
	if bytes.Contains(raw, []byte(key)) || strings.Contains(resumed.stdout, key) {
		t.Fatal("the key leaked")
	}
}
