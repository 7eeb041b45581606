package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/cucumber/godog"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/ensemble-run/ensemble/durable"
	"github.com/ensemble-run/ensemble/internal/bdd"
	"github.com/ensemble-run/ensemble/internal/inspector"
	"github.com/ensemble-run/ensemble/internal/parity"
	"github.com/ensemble-run/ensemble/session"
)

// TestParity runs the table of internal/parity through every front door of
// this binary (run, resume, batch, test, mcp serve, serve, its chat and MCP
// endpoints, ui) and holds each result
// to the result of `ensemble run` (times aside): a front door that drifts
// from the others (a service it forgets to give the runs, an option it
// reads another way) fails here. A front door that cannot run a case must
// say so, in the words the table pins. The Temporal front doors (worker,
// batch --temporal) run the same table in the temporal module.
func TestParity(t *testing.T) {
	t.Parallel()
	srv := parity.Start(t)
	for _, c := range parity.Cases() {
		t.Run(c.Name, func(t *testing.T) {
			t.Parallel()
			p := &parityRun{t: t, c: c, srv: srv, dir: t.TempDir()}
			want, code := p.run()
			if code != c.Exit {
				t.Fatalf("run: exit %d, want %d\n%s", code, c.Exit, want)
			}
			doors := map[string]func() ([]byte, int, error){
				parity.Resume: p.resume, parity.Batch: p.batch, parity.Test: p.test, parity.MCPServe: p.serve,
				parity.UI: p.ui, parity.Serve: p.served, parity.Chat: p.chatted,
				parity.MCPHTTP:      func() ([]byte, int, error) { return p.mcpHTTP(true) },
				parity.MCPHTTPTools: func() ([]byte, int, error) { return p.mcpHTTP(false) },
				parity.A2A:          p.a2a,
			}
			if !c.Kill { // a Kill case's batch is saved already
				doors[parity.BatchState] = p.batchState
			}
			for door, do := range doors {
				got, code, err := do()
				p.check(door, want, got, code, err)
			}
		})
	}
}

// parityRun is one case of the table through the front doors.
type parityRun struct {
	t   *testing.T
	c   parity.Case
	srv *parity.Servers
	dir string
	// recording is the folder the run recorded into (a Record case).
	recording string
	kills     int // the runs killed so far
}

func (p *parityRun) env(closed bool) map[string]string { return p.srv.Env(closed) }

// cmd runs the command in-process with the table's environment.
func (p *parityRun) cmd(closed bool, args ...string) outcome {
	p.t.Helper()
	return ensembleEnv(p.t, p.env(closed), args...)
}

// run is the reference: `ensemble run` (with --state, and resume
// --answer, for a case that waits for a person; with --record, then
// --replay, which must agree, for a Record case).
func (p *parityRun) run() (string, int) {
	t, c := p.t, p.c
	args := []string{"run", c.Path(), "--output", "json"}
	if c.Record {
		p.recording = filepath.Join(p.dir, "recording")
		args = append(args, "--record", p.recording)
	}
	if c.Answers != nil {
		args = append(args, "--state", filepath.Join(p.dir, "run.db"))
	}
	o := p.cmd(false, args...)
	if c.Answers != nil {
		if o.code != 5 {
			t.Fatalf("run: exit %d, want 5 (waiting)\n%s", o.code, o.stderr)
		}
		o = p.cmd(false, append([]string{"resume", filepath.Join(p.dir, "run.db"), "--output", "json"}, p.answerFlags()...)...)
	}
	p.noKey(parity.Run, o.stdout+o.stderr)
	want := parity.Normalize(t, []byte(o.stdout))
	if c.Record {
		// The case's own requests: the other cases share the server.
		before := p.srv.Model.RequestsHolding(parity.ReplayPrompts...)
		if before == 0 {
			t.Errorf("run --record sent no request holding %q", parity.ReplayPrompts)
		}
		r := p.cmd(true, "run", c.Path(), "--output", "json", "--replay", p.recording)
		if got := parity.Normalize(t, []byte(r.stdout)); got != want || r.code != o.code {
			t.Errorf("run --replay: exit %d\n%s\nwant (run --record), exit %d\n%s\n%s", r.code, got, o.code, want, r.stderr)
		}
		if n := p.srv.Model.RequestsHolding(parity.ReplayPrompts...) - before; n != 0 {
			t.Errorf("run --replay made %d model requests", n)
		}
	}
	var res struct {
		Errors []any `json:"errors"`
	}
	if err := json.Unmarshal([]byte(o.stdout), &res); err != nil || c.Exit == 0 && len(res.Errors) > 0 {
		t.Errorf("run: errors in a run that must end without any (%v):\n%s", err, o.stdout)
	}
	if c.Name == "secret" && !strings.Contains(o.stdout, "[REDACTED]") {
		t.Errorf("the key is not in the output, redacted:\n%s", o.stdout)
	}
	return want, o.code
}

func (p *parityRun) answerFlags() []string {
	var flags []string
	for _, name := range slices.Sorted(maps.Keys(p.c.Answers)) {
		flags = append(flags, "--answer", name+"="+p.c.Answers[name])
	}
	return flags
}

// noKey fails the test when the key of the secret case shows in out.
func (p *parityRun) noKey(door, out string) {
	if parity.ShowsKey(out) {
		p.t.Errorf("%s shows the key:\n%s", door, out)
	}
}

// check holds a front door's result to the run's (parity.Check); a door
// with no way to ask for the case is let off when the table says so.
func (p *parityRun) check(door, want string, got []byte, code int, err error) {
	p.t.Helper()
	if _, cannot := p.c.Cannot[door]; cannot && err == errNotApplicable {
		return
	}
	parity.Check(p.t, p.c, door, want, got, code, err)
}

// errNotApplicable: the front door has no way to ask for the case (a
// test or a served tool cannot be killed and resumed); its docs say so.
var errNotApplicable = errors.New("not applicable")

// resume interrupts the run after its first turn (or kills it, for a Kill
// case) and resumes it, answering when it waits, until it ends.
func (p *parityRun) resume() ([]byte, int, error) {
	db := filepath.Join(p.dir, "resume.db")
	var o outcome
	if p.c.Kill {
		p.killed("run", p.c.Path(), "--state", db, "--output", "json")
		o = p.cmd(false, "resume", db, "--output", "json")
	} else {
		args := []string{"run", p.c.Path(), "--state", db, "--max-turns", "1", "--output", "json"}
		if p.c.Record {
			args = append(args, "--replay", p.recording)
		}
		o = p.cmd(p.c.Record, args...)
	}
	for i := 0; (o.code == 3 || o.code == 5) && i < 10; i++ {
		args := []string{"resume", db, "--max-turns", "50", "--output", "json"}
		if o.code == 5 {
			args = append(args, p.answerFlags()...)
		}
		o = p.cmd(p.c.Record, args...)
	}
	return []byte(o.stdout), o.code, stderrError(o)
}

// stderrError is the command's stderr as an error when it failed for
// another reason than its run (exit 2: bad usage), else nil.
func stderrError(o outcome) error {
	if o.code == 2 {
		return errors.New(o.stderr)
	}
	return nil
}

// batch runs the case as the one input of a batch (killed and resumed
// with --state for a Kill case); the replay flag is refused.
func (p *parityRun) batch() ([]byte, int, error) { return p.batchIn("") }

// batchState is batch with --state: every run saved in a database.
func (p *parityRun) batchState() ([]byte, int, error) {
	return p.batchIn(filepath.Join(p.dir, "batch-state.db"))
}

// batchIn is batch, saved in the state database db ("": not saved).
func (p *parityRun) batchIn(db string) ([]byte, int, error) {
	e, err := session.Load(p.c.Path(), nil, session.LoadOptions{LookupEnv: mapEnv(p.env(false))})
	if err != nil {
		return nil, 0, err
	}
	inputs, out := filepath.Join(p.dir, "inputs.jsonl"), filepath.Join(p.dir, "out"+filepath.Base(db)+".jsonl")
	saved := []string{}
	if db != "" {
		saved = []string{"--state", db}
	}
	line, _ := json.Marshal(map[string]string{"id": "x", "input": e.Input})
	if err := os.WriteFile(inputs, append(line, '\n'), 0o644); err != nil {
		return nil, 0, err
	}
	var o outcome
	switch {
	case p.c.Kill:
		db := filepath.Join(p.dir, "batch.db")
		p.killed("batch", p.c.Path(), "--inputs", inputs, "--out", out, "--state", db)
		o = p.cmd(false, "batch", "--resume", db)
	case p.c.Record:
		o = p.cmd(true, append([]string{"batch", p.c.Path(), "--inputs", inputs, "--out", out, "--replay", p.recording}, saved...)...)
	default:
		o = p.cmd(false, append([]string{"batch", p.c.Path(), "--inputs", inputs, "--out", out}, saved...)...)
	}
	if o.code == 2 {
		return nil, o.code, errors.New(o.stderr)
	}
	data, err := os.ReadFile(out)
	if err != nil {
		return nil, o.code, err
	}
	var l struct {
		Result json.RawMessage `json:"result"`
	}
	if err := json.Unmarshal(data, &l); err != nil {
		return nil, o.code, fmt.Errorf("%v: %s", err, data)
	}
	return l.Result, o.code, nil
}

// test runs the case as a scenario of `ensemble test` (its steps and their
// options), answering when it waits, replaying a Record case's recording.
func (p *parityRun) test() ([]byte, int, error) {
	if p.c.Kill {
		return nil, 0, errNotApplicable
	}
	steps := []string{fmt.Sprintf("Given the ensemble %q", p.c.Path())}
	if p.c.Record {
		steps = append(steps, fmt.Sprintf("Given the recording %q", p.recording))
	}
	steps = append(steps, "When the ensemble runs")
	for _, name := range slices.Sorted(maps.Keys(p.c.Answers)) {
		steps = append(steps, fmt.Sprintf("When %q answers %s", name, strconv.Quote(p.c.Answers[name])))
	}
	feature := filepath.Join(p.dir, "parity.feature")
	text := "Feature: parity\n  Scenario: " + p.c.Name + "\n    " + strings.Join(steps, "\n    ") + "\n"
	if err := os.WriteFile(feature, []byte(text), 0o644); err != nil {
		return nil, 0, err
	}
	std := &stdio{getenv: mapEnv(p.env(p.c.Record))}
	opts := testOptions(std, nil)
	var sc *bdd.Scenario
	var log bytes.Buffer
	status := godog.TestSuite{
		ScenarioInitializer: func(ctx *godog.ScenarioContext) { sc = bdd.Register(ctx, opts) },
		Options:             &godog.Options{Format: "pretty", Paths: []string{feature}, Output: &log, NoColors: true},
	}.Run()
	if sc == nil || sc.Result() == nil {
		return nil, 0, fmt.Errorf("the scenario did not run (status %d):\n%s", status, log.String())
	}
	var b bytes.Buffer
	if err := sc.Result().WriteJSON(&b); err != nil {
		return nil, 0, err
	}
	return b.Bytes(), sc.Result().ExitCode(), nil
}

// serve calls the case's ensemble as a tool of `ensemble mcp serve` over
// the table's folder.
func (p *parityRun) serve() ([]byte, int, error) {
	if p.c.Kill {
		return nil, 0, errNotApplicable
	}
	if p.c.Record {
		return nil, 0, errors.New("mcp serve has no --replay: a served ensemble runs live")
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ct, st := mcp.NewInMemoryTransports()
	std := &stdio{in: strings.NewReader(""), out: io.Discard, err: io.Discard, getenv: mapEnv(p.env(false))}
	done := make(chan error, 1)
	go func() { done <- serveMCP(ctx, std, parity.Dir(), &mcpServeFlags{}, st) }()
	client := mcp.NewClient(&mcp.Implementation{Name: "parity", Version: "1"}, nil)
	cs, err := client.Connect(ctx, ct, nil)
	if err != nil {
		return nil, 0, err
	}
	defer cs.Close()
	e, err := session.Load(p.c.Path(), nil, session.LoadOptions{LookupEnv: mapEnv(p.env(false))})
	if err != nil {
		return nil, 0, err
	}
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: e.Name, Arguments: map[string]any{}})
	if err != nil {
		return nil, 0, err
	}
	text := res.Content[0].(*mcp.TextContent).Text
	var r struct {
		CompletionReason string `json:"completion_reason"`
		Errors           []struct {
			Handled bool `json:"handled"`
		} `json:"errors"`
	}
	if err := json.Unmarshal([]byte(text), &r); err != nil {
		return nil, 0, errors.New(text) // an error result: a message, not a run
	}
	code := 0
	if res.IsError {
		code = p.c.Exit
		if code == 0 {
			code = 1
		}
	}
	return []byte(text), code, nil
}

// ui saves the case's run in a database (run --state, waiting when it
// asks; killed, for a Kill case), forks it from turn 0 through the HTTP
// API of the inspector (ensemble ui), answers the fork when it waits,
// and returns the fork's result once it has ended, as state show prints
// it, but for its parent (a fork's own).
func (p *parityRun) ui() ([]byte, int, error) {
	db := filepath.Join(p.dir, "ui.db")
	if p.c.Kill {
		p.killed("run", p.c.Path(), "--state", db, "--output", "json")
	} else {
		args := []string{"run", p.c.Path(), "--state", db, "--output", "json"}
		if p.c.Record {
			args = append(args, "--replay", p.recording)
		}
		if o := p.cmd(p.c.Record, args...); o.code == 2 {
			return nil, o.code, errors.New(o.stderr)
		}
	}
	runs, err := durable.List(db)
	if err != nil {
		return nil, 0, err
	}
	const token = "parity-token"
	srv, err := inspector.New(inspector.Options{DBs: []string{db}, Token: token, LookupEnv: mapEnv(p.env(p.c.Record))})
	if err != nil {
		return nil, 0, err
	}
	ts := httptest.NewServer(srv.Handler())
	defer ts.Close()
	defer srv.Close()
	call := func(method, path string, body, out any) error {
		var r io.Reader
		if body != nil {
			b, _ := json.Marshal(body)
			r = bytes.NewReader(b)
		}
		req, err := http.NewRequest(method, ts.URL+path, r)
		if err != nil {
			return err
		}
		req.Header.Set("X-Ensemble-Token", token)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		data, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("%s %s: %s: %s", method, path, resp.Status, data)
		}
		return json.Unmarshal(data, out)
	}
	var fork struct{ ID string }
	if err := call("POST", "/api/run/fork?id="+url.QueryEscape(runs[0].ID), map[string]int{"turn": 0}, &fork); err != nil {
		return nil, 0, err
	}
	answered, answeredAt := false, 0
	for deadline := time.Now().Add(2 * time.Minute); ; time.Sleep(20 * time.Millisecond) {
		var v inspector.RunView
		if err := call("GET", "/api/run?id="+url.QueryEscape(fork.ID), nil, &v); err != nil {
			return nil, 0, err
		}
		run := v.Run
		if time.Now().After(deadline) {
			return nil, 0, fmt.Errorf("the fork %s has not ended: %+v", fork.ID, run)
		}
		if run.Job == inspector.StatusRunning || run.Status == inspector.StatusRunning {
			continue
		}
		if run.Job != "" {
			return nil, 0, errors.New(run.Job)
		}
		if run.Status == inspector.StatusSuspended && p.c.Answers != nil && !answered {
			var ok struct{}
			if err := call("POST", "/api/run/answer?id="+url.QueryEscape(fork.ID), map[string]any{"answers": p.c.Answers}, &ok); err != nil {
				return nil, 0, err
			}
			answered, answeredAt = true, run.Turns
			continue
		}
		if answered && run.Status == inspector.StatusSuspended && run.Turns == answeredAt {
			continue // the answer's run in the background has not begun yet
		}
		break
	}
	sf, info, err := durable.Load(db, fork.ID)
	if err != nil {
		return nil, 0, err
	}
	if sf.Parent == nil || sf.Parent.Run != runs[0].ID || sf.Parent.Turn != 0 {
		return nil, 0, fmt.Errorf("the fork's parent: %+v, want run %s at turn 0", sf.Parent, runs[0].ID)
	}
	o := p.cmd(false, "state", "show", db, "--run-id", fork.ID, "--output", "json")
	if o.code != 0 {
		return nil, o.code, errors.New(o.stderr)
	}
	var res map[string]json.RawMessage
	if err := json.Unmarshal([]byte(o.stdout), &res); err != nil {
		return nil, 0, fmt.Errorf("state show: %v\n%s", err, o.stdout)
	}
	delete(res, "parent")
	got, err := json.Marshal(res)
	return got, durable.Result(sf, info).ExitCode(), err
}

// killed starts the binary with args and the table's environment, waits
// for the case's parking script, kills the command with SIGKILL (and the
// parked script after it).
func (p *parityRun) killed(args ...string) {
	t := p.t
	t.Helper()
	p.kills++ // a marker each: a door's kill must not find another's
	marker := filepath.Join(p.dir, "parked-"+args[0]+strconv.Itoa(p.kills))
	env := []string{"ENSEMBLE_PROFILES=", "PARITY_BLOCK=" + marker}
	for k, v := range p.env(false) {
		env = append(env, k+"="+v)
	}
	cmd := cliCommand(t, env, args...)
	var stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = io.Discard, &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(time.Minute)
	var pid []byte
	for {
		var err error
		if pid, err = os.ReadFile(marker); err == nil {
			break
		}
		if time.Now().After(deadline) {
			cmd.Process.Kill()
			cmd.Wait()
			t.Fatalf("%v: the script never parked\n%s", args, stderr.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
	cmd.Process.Signal(syscall.SIGKILL)
	cmd.Wait()
	if n, err := strconv.Atoi(string(pid)); err == nil {
		syscall.Kill(n, syscall.SIGKILL)
	}
}

// mapEnv reads only the variables of env.
func mapEnv(env map[string]string) func(string) (string, bool) {
	return func(k string) (string, bool) {
		v, ok := env[k]
		return v, ok
	}
}
