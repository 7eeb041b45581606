package ask

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"sync"
	"syscall"

	"golang.org/x/term"

	"github.com/ensemble-run/ensemble/agent"
	"github.com/ensemble-run/ensemble/internal/opaque"
	"github.com/ensemble-run/ensemble/internal/proc"
	"github.com/ensemble-run/ensemble/internal/runners"
	"github.com/ensemble-run/ensemble/scriptexec"
)

// Runner runs ask (human) agents: it prints the agent's question and the latest
// output of each of its dependencies, then reads the answer: ONE line from In
// (the trailing newline dropped). When In is a terminal the line is read
// with a line editor (arrows, backspace, Home/End, history of earlier
// answers), the terminal in raw mode until the line is read or the wait
// ends; Ctrl-C there still interrupts the run. The answer is parsed with
// runners.ParseOutput, so typing {"approved": true} gives an object and anything
// else a string; an empty line is the output "".
//
// Asks are serialized: two ask agents of one turn take turns at the
// terminal. The agent's timeout_seconds bounds the wait. When Interactive is
// false (no terminal: CI, a pipe) every ask
// fails, telling the user to inject a response with --responses. A cancelled
// run stops waiting at once; the line then typed answers the next question.
type Runner struct {
	In          io.Reader
	Out         io.Writer // nil discards the prompt
	Interactive bool
	// Suspend: the run can wait (a durable run, a test), so a question that
	// cannot be asked (no terminal, ask_mode: suspend) waits for an answer
	// given to resume (agent.ErrAwaitingInput) instead of failing. Those
	// answers are the run's (Request.Services.Answers): each is taken
	// once, by the agent's next execution.
	Suspend bool
	// NoInput: --no-input was given, which Interactive already says; kept
	// for the message.
	NoInput bool
	// Batch: the run is one of a batch, where every question without a
	// response fails (neither --state nor a terminal helps there).
	Batch bool

	mu      sync.Mutex
	read    func() (string, error) // reads one answer; set on the first ask
	tty     *os.File               // In, when it is a terminal
	pending chan lineResult        // a read still in flight from a cancelled ask
}

// askPrompt ends what an ask agent shows.
const askPrompt = "Your answer (one line): "

var _ agent.Runner = (*Runner)(nil)

type lineResult struct {
	line string
	err  error
}

// InChild is the error of an ask agent at path, in a child ensemble, that
// has no answer: a child's run is not saved, so an answer given to resume
// has no way back into it (docs/semantics.md#ensembles-of-ensembles).
func InChild(path string) error {
	return fmt.Errorf("agent %q asks a person inside a child ensemble, whose run cannot wait for an answer: "+
		"give it a response (%q in a responses file, or Given agent %q responds \"...\" in a test)", path, path, path)
}

// Run asks once.
func (a *Runner) Run(ctx context.Context, req *agent.Request) *agent.Result {
	ag := req.Agent
	in := scriptexec.BaseInputData(req)
	in["ask"] = SpecOf(ag).Question
	res := &agent.Result{InputData: in}
	var dl agent.Deadline
	hasDeadline := false
	if req.Path == "" { // a saved question's deadline, taken by this execution
		dl, hasDeadline = req.Services.Answers.Deadline(ag.Name)
	}
	if out, ok, err := Recorded(req); err != nil || ok {
		res.Output, res.Err = out, err
		return res
	}
	if req.Path != "" && (SpecOf(ag).Mode == ModeSuspend || !a.Interactive || a.NoInput || a.In == nil) {
		res.Err = InChild(req.Path)
		return res
	}
	if answer, ok := req.Services.Answers.Take(ag.Name); ok && req.Path == "" {
		in["answered_on_resume"] = true
		res.Output, res.Err = runners.ParseOutput(answer)
		return res
	}
	if hasDeadline && dl.Passed {
		return timedOut(req, res, in, dl.At)
	}
	if SpecOf(ag).Mode == ModeSuspend || !a.Interactive || a.NoInput || a.In == nil {
		switch {
		case a.Batch:
			res.Err = fmt.Errorf("agent %q asks a person, and the runs of a batch never ask (nor wait, even with --state): inject its answer with --responses", ag.Name)
		case a.Suspend:
			res.Err = fmt.Errorf("agent %q %w", ag.Name, agent.ErrAwaitingInput)
		case SpecOf(ag).Mode == ModeSuspend:
			res.Err = fmt.Errorf("agent %q waits for an answer (ask_mode: suspend), which needs a durable run: add --state FILE, then answer with resume FILE --answer %s=...", ag.Name, ag.Name)
		case a.NoInput:
			res.Err = fmt.Errorf("agent %q asks a human but --no-input was given; add --state FILE to wait for the answer, or inject a response with --responses", ag.Name)
		default:
			res.Err = fmt.Errorf("agent %q asks a human but there is no terminal; add --state FILE to wait for the answer, or inject a response with --responses", ag.Name)
		}
		return res
	}

	if ag.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = proc.WithTimeout(ctx, ag.Timeout)
		defer cancel()
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if ctx.Err() != nil {
		res.Err = proc.ContextError(ctx, ag.Timeout)
		return res
	}
	out := a.Out
	if out == nil {
		out = io.Discard
	}
	a.init(out)
	prompt := strings.TrimSuffix(FormatAsk(req), askPrompt)
	answerCtx, at, cancel := answerWait(ctx, SpecOf(ag), dl, hasDeadline)
	defer cancel()
	if !at.IsZero() {
		prompt += waitNote(SpecOf(ag), at)
	}
	if a.tty == nil {
		prompt += askPrompt // else the line editor shows it
	}
	_, _ = io.WriteString(out, prompt)

	line, err := a.readLine(answerCtx)
	if err != nil {
		switch {
		case ctx.Err() != nil:
			res.Err = proc.ContextError(ctx, ag.Timeout)
		case answerCtx.Err() != nil:
			_, _ = io.WriteString(out, "\n")
			return timedOut(req, res, in, at)
		case errors.Is(err, io.EOF):
			res.Err = fmt.Errorf("agent %q asks a human but the input ended before an answer", ag.Name)
		default:
			res.Err = fmt.Errorf("agent %q: reading the answer: %w", ag.Name, err)
		}
		_, _ = io.WriteString(out, "\n")
		return res
	}
	if cas := opaque.Get(req.Services.Recording); cas != nil {
		if err := cas.RecordAnswer(req.Name(), recordedQuestion(req), line); err != nil {
			res.Err = err
			return res
		}
	}
	res.Output, res.Err = runners.ParseOutput(line)
	return res
}

// Recorded is the answer the run's recording has for req
// (docs/recording.md): ok is false when the question is to be asked (no
// recording, recording, or a miss with --record-missing); a miss in a
// replay is an error that shows how the question differs from the
// recorded one.
func Recorded(req *agent.Request) (out any, ok bool, err error) {
	cas := opaque.Get(req.Services.Recording)
	if cas == nil {
		return nil, false, nil
	}
	answer, ok, err := cas.Answer(req.Name(), recordedQuestion(req))
	if err != nil || !ok {
		return nil, false, err
	}
	out, err = runners.ParseOutput(answer)
	return out, true, err
}

// recordedQuestion is what an answer is recorded against: what the agent
// shows, without its header (which holds the turn) and prompt.
func recordedQuestion(req *agent.Request) string {
	q := strings.TrimSuffix(FormatAsk(req), askPrompt)
	if _, rest, ok := strings.Cut(strings.TrimPrefix(q, "\n"), "\n"); ok {
		q = rest
	}
	return strings.TrimSpace(q)
}

// init chooses how answers are read, on the first ask: with the line
// editor when In is a terminal, else line by line.
func (a *Runner) init(out io.Writer) {
	if a.read != nil {
		return
	}
	if f, ok := a.In.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
		a.tty = f
		a.read = lineEditor(struct {
			io.Reader
			io.Writer
		}{interruptReader{f}, out})
		return
	}
	r := bufio.NewReader(a.In)
	a.read = func() (string, error) {
		line, err := r.ReadString('\n')
		if err == io.EOF && line != "" {
			err = nil // a last line without a newline is an answer
		}
		return strings.TrimRight(line, "\r\n"), err
	}
}

// lineEditor reads lines from a terminal through rw with x/term's editor.
func lineEditor(rw io.ReadWriter) func() (string, error) {
	return term.NewTerminal(rw, askPrompt).ReadLine
}

// interruptReader sends the process the SIGINT that Ctrl-C would have sent
// had the terminal not been in raw mode.
type interruptReader struct{ r io.Reader }

func (i interruptReader) Read(p []byte) (int, error) {
	n, err := i.r.Read(p)
	if bytes.IndexByte(p[:n], 3) >= 0 {
		_ = syscall.Kill(syscall.Getpid(), syscall.SIGINT)
	}
	return n, err
}

// readLine reads one line, or returns when ctx ends; a read left in flight
// is picked up by the next call. A terminal is in raw mode only while this
// waits. Called with a.mu held.
func (a *Runner) readLine(ctx context.Context) (string, error) {
	if a.tty != nil {
		if st, err := term.MakeRaw(int(a.tty.Fd())); err == nil {
			defer term.Restore(int(a.tty.Fd()), st)
		}
	}
	if a.pending == nil {
		ch := make(chan lineResult, 1)
		a.pending = ch
		read := a.read
		go func() {
			line, err := read()
			ch <- lineResult{line, err}
		}()
	}
	select {
	case r := <-a.pending:
		a.pending = nil
		return r.line, r.err
	case <-ctx.Done():
		return "", ctx.Err()
	}
}

// FormatAsk is what an ask agent shows: a header, the question, the latest
// output of each dependency (strings as they are, other values as indented
// JSON; dependencies in the agent's declaration order, new ones marked), any
// request parameters, and a prompt.
func FormatAsk(req *agent.Request) string {
	var b strings.Builder
	ag := req.Agent
	fmt.Fprintf(&b, "\n── %s asks (turn %d) ──\n", ag.Name, req.Turn)
	if q := strings.TrimSpace(SpecOf(ag).Question); q != "" {
		b.WriteString(q)
		b.WriteString("\n")
	}
	if text, ok := runners.Given(req); ok {
		// An input template: what it gives, in place of the outputs.
		if text = strings.TrimSpace(text); text != "" {
			b.WriteString("\n" + text + "\n")
		}
		b.WriteString("\n" + askPrompt)
		return b.String()
	}
	for _, name := range req.DependencyOrder() {
		label := name
		if slices.Contains(req.Fresh, name) {
			label += " (new)"
		}
		fmt.Fprintf(&b, "\n%s:\n%s\n", label, indent(readable(req.Dependencies[name]), "  "))
	}
	if len(req.RequestParameters) > 0 {
		fmt.Fprintf(&b, "\nrequest parameters:\n%s\n", indent(readable(req.RequestParameters), "  "))
	}
	b.WriteString("\n" + askPrompt)
	return b.String()
}

func readable(v any) string {
	if s, ok := v.(string); ok {
		return s
	}
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}

func indent(s, prefix string) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	for i, l := range lines {
		if l != "" {
			lines[i] = prefix + l
		}
	}
	return strings.Join(lines, "\n")
}
