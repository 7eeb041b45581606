// Package proc starts the processes of script agents and tools and keeps
// them in hand: each leads its own process group, which is killed whole on
// timeout, cancellation or too much output; stdout is capped and only the
// tail of stderr is kept (docs/semantics.md#script-agents). It is not an API.
package proc

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"
	"unicode/utf8"
)

// DefaultMaxOutput is the stdout limit of a script or tool (docs/semantics.md#script-agents).
const DefaultMaxOutput int64 = 10 << 20

// StderrTail is how much of the end of stderr Run keeps.
const StderrTail = 4 << 10

// drainDelay bounds how long Run waits for stdout/stderr to reach EOF after
// the process and its group are gone (a process that left the group, e.g.
// with setsid, may still hold the pipes).
const drainDelay = 2 * time.Second

// Spec describes one process to run.
type Spec struct {
	Path    string   // the script; relative paths resolve against Dir
	Dir     string   // working directory ("" = the current one)
	Stdin   []byte   // written to stdin, which is then closed
	Env     []string // the full environment; nil = this process's
	Timeout time.Duration
	// MaxOutput caps stdout; 0 means DefaultMaxOutput.
	MaxOutput int64
	// Redact, when set, replaces the secrets in the stderr tail before it
	// is cut to StderrTail bytes; Hold is how many more bytes are kept for
	// it (a secret's longest spelling, less one), so that the cut never
	// leaves the end of a secret in the tail (redact.go).
	Redact func(string) string
	Hold   int
}

// Result is what a process that started produced.
type Result struct {
	Stdout []byte
	Stderr string // the last StderrTail bytes of stderr, trimmed
}

// ExitError is a process that exited with a non-zero code or was killed by a
// signal of its own.
type ExitError struct {
	Code   int    // -1 when killed by a signal
	Signal string // the signal, when killed by one
	Stderr string // tail of stderr
}

func (e *ExitError) Error() string {
	var msg string
	if e.Signal != "" {
		msg = "script was killed by signal " + e.Signal
	} else {
		msg = fmt.Sprintf("script exited with code %d", e.Code)
	}
	if e.Stderr != "" {
		msg += ": " + e.Stderr
	}
	return msg
}

// TimeoutError is an execution stopped because a time limit passed (a
// process is killed with its whole process group). errors.Is(err, context.DeadlineExceeded) holds.
type TimeoutError struct {
	// After is the limit that passed; 0 when it was the caller's deadline
	// rather than Spec.Timeout.
	After time.Duration
	// Cause is the caller's reason for its deadline (context.Cause), when
	// it gave one: the engine names the agent's own timeout_seconds so.
	Cause error
}

func (e *TimeoutError) Error() string {
	switch {
	case e.After > 0:
		return fmt.Sprintf("timeout: timed out after %s", e.After)
	case e.Cause != nil:
		return "timeout: " + e.Cause.Error()
	}
	return "timeout: the run's time limit was reached"
}

// Unwrap makes errors.Is(err, context.DeadlineExceeded) true, and
// errors.Is(err, cause) for the caller's cause.
func (e *TimeoutError) Unwrap() []error {
	if e.Cause != nil {
		return []error{context.DeadlineExceeded, e.Cause}
	}
	return []error{context.DeadlineExceeded}
}

// CancelledError is an execution stopped because the run was cancelled (a
// process is killed with its whole process group). errors.Is(err, context.Canceled) holds.
type CancelledError struct{}

func (*CancelledError) Error() string { return "cancelled" }

// Unwrap makes errors.Is(err, context.Canceled) true.
func (*CancelledError) Unwrap() error { return context.Canceled }

// OutputLimitError is a process whose stdout went past the limit; it was
// killed with its process group.
type OutputLimitError struct{ Limit int64 }

func (e *OutputLimitError) Error() string {
	return "output exceeds " + formatSize(e.Limit) + "; the process group was killed"
}

// InterpreterError is a script that cannot be started: no interpreter for
// its extension, or the interpreter is not installed.
type InterpreterError struct {
	Path        string
	Interpreter string // "" when none is known for the file
}

func (e *InterpreterError) Error() string {
	if e.Interpreter == "" {
		return fmt.Sprintf("cannot run %s: it is not executable and its extension is not one of .py, .sh, .js, .rb "+
			"(make it executable with a #! line, or rename it)", e.Path)
	}
	return fmt.Sprintf("cannot run %s: its interpreter %q was not found in PATH", e.Path, e.Interpreter)
}

func formatSize(n int64) string {
	if n >= 1<<20 && n%(1<<20) == 0 {
		return fmt.Sprintf("%d MiB", n>>20)
	}
	if n >= 1<<10 && n%(1<<10) == 0 {
		return fmt.Sprintf("%d KiB", n>>10)
	}
	return fmt.Sprintf("%d bytes", n)
}

// interpreters maps a script's extension to the program that runs it when
// the file is not executable (docs/semantics.md#script-agents).
var interpreters = map[string]string{
	".py": "python3",
	".sh": "bash",
	".js": "node",
	".rb": "ruby",
}

// Command chooses how to run the script at path (docs/semantics.md#script-agents):
//   - an executable file that starts with "#!" runs directly (its shebang);
//   - otherwise a known extension picks the interpreter: .py python3,
//     .sh bash, .js node, .rb ruby (also for an executable file without a
//     shebang, which the kernel could not run);
//   - otherwise an executable file runs directly (a binary);
//   - otherwise it is an *InterpreterError.
//
// name is the program to start and args its arguments (the script path
// included). The interpreter is not looked up in PATH here; Run does that
// against the child's environment.
func Command(path string) (name string, args []string, err error) {
	fi, err := os.Stat(path)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return "", nil, fmt.Errorf("script %s does not exist", path)
		}
		return "", nil, fmt.Errorf("cannot run %s: %w", path, err)
	}
	if fi.IsDir() {
		return "", nil, fmt.Errorf("cannot run %s: it is a directory", path)
	}
	executable := fi.Mode()&0o111 != 0
	if executable && hasShebang(path) {
		return path, nil, nil
	}
	if interp, ok := interpreters[strings.ToLower(filepath.Ext(path))]; ok {
		return interp, []string{path}, nil
	}
	if executable {
		return path, nil, nil
	}
	return "", nil, &InterpreterError{Path: path}
}

func hasShebang(path string) bool {
	f, err := os.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	var b [2]byte
	n, _ := io.ReadFull(f, b[:])
	return n == 2 && b[0] == '#' && b[1] == '!'
}

// lookPath finds an interpreter in the PATH of env (the child's), or of this
// process when env has none.
func lookPath(name string, env []string) (string, error) {
	path, found := "", false
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, "PATH="); ok {
			path, found = v, true
		}
	}
	if !found {
		path = os.Getenv("PATH")
	}
	for _, dir := range filepath.SplitList(path) {
		if dir == "" {
			dir = "."
		}
		p := filepath.Join(dir, name)
		if fi, err := os.Stat(p); err == nil && !fi.IsDir() && fi.Mode()&0o111 != 0 {
			if !filepath.IsAbs(p) {
				if abs, err := filepath.Abs(p); err == nil {
					p = abs
				}
			}
			return p, nil
		}
	}
	return "", exec.ErrNotFound
}

var (
	errExecTimeout = errors.New("exec timeout")
	errOutputLimit = errors.New("output limit")
)

// Run runs one script or tool process (docs/semantics.md#script-agents):
//   - the interpreter is chosen by Command and looked up in the PATH of
//     spec.Env;
//   - stdin gets spec.Stdin and is then closed; it is written concurrently,
//     so a process that never reads it neither deadlocks nor fails;
//   - the process leads a new process group; on timeout, cancellation or
//     output overflow the whole group is killed with SIGKILL, and when the
//     process exits any processes it left behind in its group are killed too:
//     nothing an execution started outlives it (except processes that left the
//     group on purpose, whose pipes are closed after a short delay);
//   - stdout is capped at spec.MaxOutput (default 10 MiB); only the last
//     StderrTail bytes of stderr are kept.
//
// The result is non-nil whenever the process started, even with an error, so
// callers can look at what it printed. Errors are *ExitError, *TimeoutError,
// *CancelledError, *OutputLimitError, *InterpreterError, or an error
// describing why the process could not start.
func Run(ctx context.Context, spec Spec) (*Result, error) {
	path, name, args, err := resolve(spec)
	if err != nil {
		return nil, err
	}
	maxOut := spec.MaxOutput
	if maxOut <= 0 {
		maxOut = DefaultMaxOutput
	}

	runCtx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	if spec.Timeout > 0 {
		var stop context.CancelFunc
		runCtx, stop = context.WithTimeoutCause(runCtx, spec.Timeout, errExecTimeout)
		defer stop()
	}
	if runCtx.Err() != nil {
		return nil, ContextError(runCtx, spec.Timeout)
	}

	stdinR, stdinW, stdoutR, stdoutW, stderrR, stderrW, err := openPipes()
	if err != nil {
		return nil, fmt.Errorf("cannot run %s: %w", path, err)
	}

	cmd := exec.CommandContext(runCtx, name, args...)
	cmd.Dir = spec.Dir
	mark := NewMark()
	cmd.Env = MarkedEnv(spec.Env, mark)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = stdinR, stdoutW, stderrW
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return killGroup(cmd.Process.Pid) }
	// The pipes are ours (*os.File), so Wait never waits on them; WaitDelay
	// only bounds a process that survives Cancel.
	cmd.WaitDelay = time.Second

	if err := cmd.Start(); err != nil {
		closeAll(stdinR, stdinW, stdoutR, stdoutW, stderrR, stderrW)
		if runCtx.Err() != nil {
			return nil, ContextError(runCtx, spec.Timeout)
		}
		return nil, fmt.Errorf("cannot run %s: %w", path, err)
	}
	closeAll(stdinR, stdoutW, stderrW)
	pid := cmd.Process.Pid

	var wg sync.WaitGroup
	wg.Add(3)
	go func() { // stdin: written, then closed; EPIPE is not an error
		defer wg.Done()
		if len(spec.Stdin) > 0 {
			_, _ = stdinW.Write(spec.Stdin)
		}
		_ = stdinW.Close()
	}()
	var stdout bytes.Buffer
	var overflow bool
	go func() {
		defer wg.Done()
		overflow = readCapped(stdoutR, &stdout, maxOut)
		if overflow {
			cancel(errOutputLimit) // kills the group through cmd.Cancel
		}
	}()
	tail := newTail(spec)
	go func() {
		defer wg.Done()
		_, _ = io.Copy(tail, stderrR)
	}()

	waitErr := cmd.Wait()
	stopLeftovers(pid, mark, runCtx.Err() != nil, &wg, stdinW, stdoutR, stderrR)

	res := &Result{Stdout: stdout.Bytes(), Stderr: tail.String()}
	switch {
	case overflow:
		return res, &OutputLimitError{Limit: maxOut}
	case waitErr == nil || (errors.Is(waitErr, exec.ErrWaitDelay) && cmd.ProcessState != nil && cmd.ProcessState.Success()):
		return res, nil
	case runCtx.Err() != nil:
		return res, ContextError(runCtx, spec.Timeout)
	}
	return res, exitError(waitErr, res.Stderr, path)
}

// stopLeftovers kills what is left of the process group led by pid, which
// ended, and, when it was stopped, the processes that left the group
// carrying mark; then it waits for the readers of its pipes (wg) to be
// done, at most drainDelay, and closes the pipes.
func stopLeftovers(pid int, mark string, stopped bool, wg *sync.WaitGroup, pipes ...*os.File) {
	_ = killGroup(pid)
	if stopped {
		KillEscaped(mark)
	}
	drained := make(chan struct{})
	go func() { wg.Wait(); close(drained) }()
	select {
	case <-drained:
	case <-time.After(drainDelay):
		// Something outside the group holds the pipes: it is killed if it
		// carries the mark, and not waited for.
		KillEscaped(mark)
		closeAll(pipes...)
		<-drained
	}
	closeAll(pipes...)
}

// openPipes opens the process's three pipes, each as its read and write
// ends; on an error, none stays open.
func openPipes() (stdinR, stdinW, stdoutR, stdoutW, stderrR, stderrW *os.File, err error) {
	if stdinR, stdinW, err = os.Pipe(); err != nil {
		return
	}
	if stdoutR, stdoutW, err = os.Pipe(); err != nil {
		closeAll(stdinR, stdinW)
		return
	}
	if stderrR, stderrW, err = os.Pipe(); err != nil {
		closeAll(stdinR, stdinW, stdoutR, stdoutW)
	}
	return
}

// exitError is the error of a process that failed: an *ExitError with its
// code or signal when it exited.
func exitError(waitErr error, stderr, path string) error {
	var ee *exec.ExitError
	if errors.As(waitErr, &ee) {
		xe := &ExitError{Code: ee.ExitCode(), Stderr: stderr}
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			xe.Signal = ws.Signal().String()
		}
		return xe
	}
	return fmt.Errorf("running %s: %w", path, waitErr)
}

// resolve is the spec's program as an absolute path, so that a bare name
// is never looked up in PATH, and the command that runs it: the program,
// or the interpreter its #! line names, found in the spec's PATH.
func resolve(spec Spec) (path, name string, args []string, err error) {
	path = spec.Path
	if !filepath.IsAbs(path) && spec.Dir != "" {
		path = filepath.Join(spec.Dir, path)
	}
	// Absolute, so that a bare name is never looked up in PATH.
	if abs, err := filepath.Abs(path); err == nil {
		path = abs
	}
	name, args, err = Command(path)
	if err != nil {
		return "", "", nil, err
	}
	if name != path {
		resolved, err := lookPath(name, spec.Env)
		if err != nil {
			return "", "", nil, &InterpreterError{Path: path, Interpreter: name}
		}
		name = resolved
	}
	return path, name, args, nil
}

// WithTimeout bounds ctx by timeout such that ContextError reports its end
// as a *TimeoutError after timeout: what Run does with Spec.Timeout, for
// waits that are not a process (an ask agent's).
func WithTimeout(ctx context.Context, timeout time.Duration) (context.Context, context.CancelFunc) {
	return context.WithTimeoutCause(ctx, timeout, errExecTimeout)
}

// ContextError explains why runCtx ended.
func ContextError(runCtx context.Context, timeout time.Duration) error {
	cause := context.Cause(runCtx)
	switch {
	case errors.Is(cause, errExecTimeout):
		return &TimeoutError{After: timeout}
	case errors.Is(runCtx.Err(), context.DeadlineExceeded):
		if errors.Is(cause, context.DeadlineExceeded) {
			return &TimeoutError{}
		}
		return &TimeoutError{Cause: cause}
	default:
		return &CancelledError{}
	}
}

// killGroup kills the process group led by pid.
func killGroup(pid int) error {
	if pid <= 0 {
		return nil
	}
	if err := syscall.Kill(-pid, syscall.SIGKILL); err != nil {
		if errors.Is(err, syscall.ESRCH) {
			return os.ErrProcessDone
		}
		return err
	}
	return nil
}

func closeAll(files ...*os.File) {
	for _, f := range files {
		_ = f.Close()
	}
}

// readCapped reads r into buf until EOF; it reports true, and stops reading,
// when more than limit bytes arrive.
func readCapped(r io.Reader, buf *bytes.Buffer, limit int64) bool {
	chunk := make([]byte, 32<<10)
	for {
		n, err := r.Read(chunk)
		if n > 0 {
			if int64(buf.Len())+int64(n) > limit {
				return true
			}
			buf.Write(chunk[:n])
		}
		if err != nil {
			return false
		}
	}
}

// tailBuffer keeps the last max bytes written to it.
type tailBuffer struct {
	max       int
	buf       []byte
	truncated bool
	// keep and redact: see redacted (redact.go).
	keep   int
	redact func(string) string
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	n := len(p)
	if len(p) >= t.max {
		t.truncated = t.truncated || len(t.buf) > 0 || len(p) > t.max
		t.buf = append(t.buf[:0], p[len(p)-t.max:]...)
		return n, nil
	}
	if over := len(t.buf) + len(p) - t.max; over > 0 {
		t.truncated = true
		t.buf = append(t.buf[:0], t.buf[over:]...)
	}
	t.buf = append(t.buf, p...)
	return n, nil
}

// String is the tail, starting on a UTF-8 boundary, trimmed of white space,
// and marked with "…" when earlier output was dropped.
func (t *tailBuffer) String() string {
	b, truncated := t.buf, t.truncated
	if t.redact != nil {
		b, truncated = t.redacted()
	}
	if truncated {
		for n := 0; n < utf8.UTFMax && len(b) > 0 && !utf8.RuneStart(b[0]); n++ {
			b = b[1:]
		}
	}
	s := strings.TrimSpace(strings.ToValidUTF8(string(b), "\uFFFD"))
	if truncated && s != "" {
		s = "…" + s
	}
	return s
}

// KillGroup kills the process group led by pid with SIGKILL: a process
// started with Setpgid and whatever it started. os.ErrProcessDone when the
// group is gone.
func KillGroup(pid int) error { return killGroup(pid) }
