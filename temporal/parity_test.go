package temporal_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/ensemble-run/ensemble/engine"
	"github.com/ensemble-run/ensemble/internal/parity"
	"github.com/ensemble-run/ensemble/session"
)

// TestParity runs the table of internal/parity through the Temporal front
// doors, the real binary's `run --temporal` (its workers `ensemble worker`
// processes), `batch --temporal` and `serve --temporal`, and holds each result to what `ensemble
// run` prints locally, times aside (cmd/ensemble's TestParity holds the
// other front doors to it). A case the engine cannot run is refused with
// the error the table pins; the Kill case kills the worker that runs it and
// lets another finish.
func TestParity(t *testing.T) {
	ts, _, queue := server(t)
	bin := ensembleBinary(t)
	srv := parity.Start(t)
	addr := func(queue string) []string {
		return []string{"--temporal", ts.GetFrontendHostPort(), "--namespace", ts.GetDefaultNamespace(), "--task-queue", queue}
	}
	env := []string{"ENSEMBLE_PROFILES="}
	for k, v := range srv.Env(false) {
		env = append(env, k+"="+v)
	}
	startCLIWorker(t, bin, env, addr(queue))
	for _, c := range parity.Cases() {
		t.Run(c.Name, func(t *testing.T) {
			p := &temporalParity{t: t, c: c, bin: bin, env: env, addr: addr, queue: queue, dir: t.TempDir()}
			want, code := p.local()
			if code != c.Exit {
				t.Fatalf("run: exit %d, want %d\n%s", code, c.Exit, want)
			}
			for door, do := range map[string]func() ([]byte, int, error){parity.Worker: p.worker, parity.Temporal: p.batch,
				parity.ServeTemporal: p.served} {
				got, code, err := do()
				p.check(door, want, got, code, err)
			}
		})
	}
}

var (
	buildOnce sync.Once
	builtBin  string
	buildErr  error
)

func TestMain(m *testing.M) {
	code := m.Run()
	if builtBin != "" {
		os.RemoveAll(filepath.Dir(builtBin))
	}
	os.Exit(code)
}

// ensembleBinary builds cmd/ensemble once for the tests of the package.
func ensembleBinary(t *testing.T) string {
	t.Helper()
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "ensemble-temporal-*")
		if err != nil {
			buildErr = err
			return
		}
		builtBin = filepath.Join(dir, "ensemble")
		build := exec.Command("go", "build", "-o", builtBin, "./cmd/ensemble")
		build.Dir = ".." // in the main module, with its own dependencies
		if out, err := build.CombinedOutput(); err != nil {
			buildErr = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return builtBin
}

// startCLIWorker starts `ensemble worker` with env, until the test ends or
// the returned function kills it (SIGKILL).
func startCLIWorker(t *testing.T, bin string, env, addr []string) (kill func()) {
	t.Helper()
	w := exec.Command(bin, append([]string{"worker"}, addr...)...)
	w.Env = append(os.Environ(), env...)
	var stderr bytes.Buffer
	w.Stderr = &stderr
	if err := w.Start(); err != nil {
		t.Fatal(err)
	}
	var once sync.Once
	stop := func(sig syscall.Signal) {
		once.Do(func() {
			_ = w.Process.Signal(sig)
			_ = w.Wait()
		})
	}
	t.Cleanup(func() { stop(syscall.SIGTERM) })
	return func() { stop(syscall.SIGKILL) }
}

type temporalParity struct {
	t         *testing.T
	c         parity.Case
	bin       string
	env       []string
	addr      func(queue string) []string
	queue     string
	dir       string
	recording string
}

// cli runs the binary with the table's environment (and more variables).
func (p *temporalParity) cli(more []string, args ...string) (string, string, int) {
	p.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitFor)
	defer cancel()
	cmd := exec.CommandContext(ctx, p.bin, args...)
	cmd.Env = append(append(os.Environ(), p.env...), more...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		p.t.Fatalf("ensemble %s: %v", strings.Join(args, " "), err)
	}
	return out.String(), errb.String(), cmd.ProcessState.ExitCode()
}

// local is the reference: what `ensemble run` prints locally (with --state
// and resume --answer for a case that waits; with --record for a Record
// case).
func (p *temporalParity) local() (string, int) {
	c := p.c
	args := []string{"run", c.Path(), "--output", "json"}
	if c.Record {
		p.recording = filepath.Join(p.dir, "recording")
		args = append(args, "--record", p.recording)
	}
	if c.Answers != nil {
		args = append(args, "--state", filepath.Join(p.dir, "run.db"))
	}
	out, stderr, code := p.cli(nil, args...)
	if c.Answers != nil {
		if code != 5 {
			p.t.Fatalf("run: exit %d, want 5\n%s", code, stderr)
		}
		out, stderr, code = p.cli(nil, append([]string{"resume", filepath.Join(p.dir, "run.db"), "--output", "json"}, p.answerFlags()...)...)
	}
	if parity.ShowsKey(out + stderr) {
		p.t.Errorf("run shows the key:\n%s%s", out, stderr)
	}
	return parity.Normalize(p.t, []byte(out)), code
}

func (p *temporalParity) answerFlags() []string {
	var flags []string
	for _, name := range slices.Sorted(maps.Keys(p.c.Answers)) {
		flags = append(flags, "--answer", name+"="+p.c.Answers[name])
	}
	return flags
}

func (p *temporalParity) check(door, want string, got []byte, code int, err error) {
	p.t.Helper()
	parity.Check(p.t, p.c, door, want, got, code, err)
}

// worker runs the case with `run --temporal`: answered with `ensemble
// answer` when it waits; for a Kill case on a queue of its own, whose
// first worker is killed while a script of the run is parked.
func (p *temporalParity) worker() ([]byte, int, error) {
	t, c := p.t, p.c
	queue := p.queue
	var killFirst func()
	marker := filepath.Join(p.dir, "parked")
	if c.Kill {
		queue = p.queue + "-kill"
		killFirst = startCLIWorker(t, p.bin, append(slices.Clone(p.env), "PARITY_BLOCK="+marker), p.addr(queue))
	}
	id := fmt.Sprintf("parity-%s-%d", c.Name, ids.Add(1))
	args := append([]string{"run", c.Path(), "--run-id", id, "--output", "json"}, p.addr(queue)...)
	if c.Record {
		args = append(args, "--replay", p.recording)
	}
	type result struct {
		out, stderr string
		code        int
	}
	done := make(chan result, 1)
	go func() {
		out, stderr, code := p.cli(nil, args...)
		done <- result{out, stderr, code}
	}()
	deadline := time.Now().Add(waitFor)
	switch {
	case c.Kill:
		pid := waitFile(t, marker, deadline)
		killFirst()
		if n, err := strconv.Atoi(pid); err == nil {
			_ = syscall.Kill(n, syscall.SIGKILL)
		}
		startCLIWorker(t, p.bin, p.env, p.addr(queue)) // takes the run over
	case c.Answers != nil:
		for {
			select {
			case r := <-done:
				return nil, r.code, fmt.Errorf("the run ended (exit %d) before it waited:\n%s%s", r.code, r.out, r.stderr)
			default:
			}
			out, _, _ := p.cli(nil, append([]string{"state", "show", id, "--output", "json"}, p.addr(queue)...)...)
			var r engine.Result
			if json.Unmarshal([]byte(out), &r) == nil && r.CompletionReason == engine.AwaitingInput {
				break
			}
			if time.Now().After(deadline) {
				return nil, 0, fmt.Errorf("the run never waited; state show says:\n%s", out)
			}
			time.Sleep(200 * time.Millisecond)
		}
		for _, name := range slices.Sorted(maps.Keys(c.Answers)) {
			if _, stderr, code := p.cli(nil, append([]string{"answer", id, name, c.Answers[name]}, p.addr(queue)...)...); code != 0 {
				return nil, code, fmt.Errorf("answer: exit %d: %s", code, stderr)
			}
		}
	}
	r := <-done
	if r.code == 2 {
		return nil, r.code, errors.New(r.stderr)
	}
	return []byte(r.out), r.code, nil
}

// batch runs the case as the one input of `batch --temporal`.
func (p *temporalParity) batch() ([]byte, int, error) {
	c := p.c
	if c.Kill {
		return nil, 0, errors.New("not killed here: the worker front door kills the worker of a run, and a batch's runs are the same workflows")
	}
	table := map[string]string{}
	for _, kv := range p.env {
		k, v, _ := strings.Cut(kv, "=")
		table[k] = v
	}
	e, err := session.Load(c.Path(), nil, session.LoadOptions{LookupEnv: func(k string) (string, bool) { v, ok := table[k]; return v, ok }})
	if err != nil {
		return nil, 0, err
	}
	inputs, out := filepath.Join(p.dir, "inputs.jsonl"), filepath.Join(p.dir, "out.jsonl")
	line, _ := json.Marshal(map[string]string{"id": "x", "input": e.Input})
	if err := os.WriteFile(inputs, append(line, '\n'), 0o644); err != nil {
		return nil, 0, err
	}
	args := append([]string{"batch", c.Path(), "--inputs", inputs, "--out", out, "-q"}, p.addr(p.queue)...)
	if c.Record {
		args = append(args, "--replay", p.recording)
	}
	_, stderr, code := p.cli(nil, args...)
	if code == 2 {
		return nil, code, errors.New(stderr)
	}
	data, err := os.ReadFile(out)
	if err != nil {
		return nil, code, err
	}
	var l struct {
		Result json.RawMessage `json:"result"`
	}
	if err := json.Unmarshal(data, &l); err != nil {
		return nil, code, fmt.Errorf("%v: %s", err, data)
	}
	return l.Result, code, nil
}

// waitFile waits for the file at path and returns what it holds.
func waitFile(t *testing.T, path string, deadline time.Time) string {
	t.Helper()
	for {
		if b, err := os.ReadFile(path); err == nil {
			return string(b)
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s never came", path)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
