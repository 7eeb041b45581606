package report

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/ensemble-run/ensemble/events"
)

// DefaultInterval is how often a live status line is redrawn (10 Hz).
const DefaultInterval = 100 * time.Millisecond

// ProgressOptions tune a Progress.
type ProgressOptions struct {
	// Live redraws a status line in place under the log lines: the turn,
	// the agents running with their elapsed time, the tool each one is
	// calling, and the tail of streamed text. For terminals only.
	Live bool
	// Stream shows streamed LLM text (text_delta events), line by line.
	Stream bool
	// Width returns the terminal's width in columns; nil or ≤ 0 means 80.
	// The status line is kept shorter, so that it never wraps.
	Width func() int
	// Interval is the redraw period of the status line; 0 means
	// DefaultInterval.
	Interval time.Duration
	// Now is the clock; nil means time.Now. The elapsed times are measured
	// from the events' timestamps to Now.
	Now func() time.Time
	// Pause names agents during whose executions the status line is taken
	// down and not redrawn: agents that talk to the person at the terminal
	// (ask agents).
	Pause func(agent string) bool
}

// Progress renders a run's events as text: a log of lines (turns, finished
// agents, tool calls, warnings, streamed text) and, when Live, a status line
// redrawn in place at most once per Interval, by Tick.
type Progress struct {
	mu   sync.Mutex
	w    io.Writer
	opts ProgressOptions

	turn      int
	turnStart time.Time
	agents    []*agentProgress // of the current turn, in file order
	byName    map[string]*agentProgress
	partial   map[string]*strings.Builder // streamed text not yet ended by a newline
	lastText  string                      // the agent that streamed last
	// failedInstances counts the failed instances of each fan-out agent
	// in the turn, for the mark of its gathered output.
	failedInstances map[string]int
	shown           bool // the status line is on the screen
	frame           int
	ended           bool
}

type agentProgress struct {
	name     string
	started  time.Time // zero while it waits for a slot (parallel_agent_limit)
	finished bool
	tools    int    // tool calls in flight
	tool     string // the latest of them
}

// NewProgress returns a Progress writing to w.
func NewProgress(w io.Writer, opts ProgressOptions) *Progress {
	if opts.Interval <= 0 {
		opts.Interval = DefaultInterval
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	return &Progress{w: w, opts: opts, byName: map[string]*agentProgress{}, partial: map[string]*strings.Builder{}}
}

// Sink is the Progress as an event sink.
func (p *Progress) Sink() events.Sink { return p.Event }

// Event renders one event.
func (p *Progress) Event(ev events.Event) {
	p.mu.Lock()
	defer p.mu.Unlock()
	switch ev.Type {
	case events.Warning:
		p.line("  ! %s", ev.Message)
	case events.AgentRetry:
		p.line("  ↻ %s: attempt %d failed, trying again: %s", ev.Agent, ev.Attempt, oneLine(ev.Error))
	case events.BudgetExceeded:
		p.line("  $ %s", oneLine(ev.Message))
	case events.TurnStarted:
		p.turn, p.turnStart = ev.Turn, ev.Time
		p.agents, p.byName = nil, map[string]*agentProgress{}
		for _, n := range ev.Agents {
			a := &agentProgress{name: n}
			p.agents = append(p.agents, a)
			p.byName[n] = a
		}
		p.line("turn %d: %s", ev.Turn, strings.Join(ev.Agents, ", "))
	case events.AgentStarted:
		a := p.byName[ev.Agent]
		if a == nil {
			a = p.instanceStarted(ev.Agent) // a fan-out's instance (fanout.go)
		}
		if a != nil {
			a.started = ev.Time
		}
		if p.paused() {
			p.clear()
		}
	case events.ToolCallStarted:
		if a := p.byName[ev.Agent]; a != nil {
			a.tools++
			a.tool = ev.Tool
		}
		p.flushText(ev.Agent)
		p.line("    → %s: %s %s", ev.Agent, ev.Tool, Truncate(oneLine(ev.Arguments), 60))
	case events.ToolCallCompleted:
		if a := p.byName[ev.Agent]; a != nil && a.tools > 0 {
			a.tools--
		}
		if ev.Error != "" {
			p.line("    ✗ %s: %s failed (%s) %s", ev.Agent, ev.Tool, Seconds(ev.Duration), Truncate(oneLine(ev.Error), 80))
		} else {
			p.line("    ← %s: %s (%s) %s", ev.Agent, ev.Tool, Seconds(ev.Duration), Preview(ev.Output, 60))
		}
	case events.TextDelta:
		if p.opts.Stream {
			p.text(ev.Agent, ev.Message)
		}
	case events.AgentFinished:
		if a := p.byName[ev.Agent]; a != nil {
			a.finished, a.tools = true, 0
		}
		p.flushText(ev.Agent)
	case events.AgentCompleted:
		p.flushText(ev.Agent)
		list, isList := ev.Output.([]any)
		switch failed := p.failedInstances[ev.Agent]; {
		case failed > 0 && isList && failed >= len(list):
			// fan_out.on_error: continue, and nothing came of it.
			p.line("  ✗ %s (%s) every instance failed (%d)", ev.Agent, Seconds(ev.Duration), failed)
		case failed > 0:
			p.line("  ! %s (%s) %d of %d instances failed: %s", ev.Agent, Seconds(ev.Duration), failed, len(list), Preview(ev.Output, 60))
		default:
			p.line("  ✓ %s (%s) %s", ev.Agent, Seconds(ev.Duration), Preview(ev.Output, 70))
		}
		if ev.Error != "" {
			p.line("    error: %s", oneLine(ev.Error))
		}
	case events.AgentFailed:
		p.flushText(ev.Agent)
		if base, ok := instanceOf(ev.Agent); ok {
			if p.failedInstances == nil {
				p.failedInstances = map[string]int{}
			}
			p.failedInstances[base]++
		}
		p.line("  ✗ %s (%s) %s", ev.Agent, Seconds(ev.Duration), oneLine(ev.Error))
	case events.AgentSkipped:
		p.line("  - %s skipped: %s", ev.Agent, oneLine(ev.Message))
	case events.TurnCompleted:
		p.agents, p.byName, p.failedInstances = nil, map[string]*agentProgress{}, nil
		p.clear()
	case events.InputRequested:
		p.line("  ? %s waits for an answer: %s", ev.Agent, oneLine(ev.Question))
	case events.RunCompleted:
		p.end()
	}
}

// Tick redraws the status line (live mode); call it every Interval.
func (p *Progress) Tick() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.opts.Live || p.ended {
		return
	}
	status := p.status()
	if status == "" || p.paused() {
		p.clear()
		return
	}
	p.frame++
	fmt.Fprint(p.w, "\r\x1b[2K"+TerminalSafe(status))
	p.shown = true
}

// Start redraws the status line every Interval until the returned stop is
// called; stop then takes the status line down and prints any streamed
// text still pending. Without Live, Start does nothing but stop still
// flushes.
func (p *Progress) Start() (stop func()) {
	if !p.opts.Live {
		return p.Close
	}
	t := time.NewTicker(p.opts.Interval)
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		for {
			select {
			case <-t.C:
				p.Tick()
			case <-done:
				return
			}
		}
	})
	return func() {
		t.Stop()
		close(done)
		wg.Wait()
		p.Close()
	}
}

// Close takes the status line down and prints pending streamed text.
func (p *Progress) Close() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.end()
}

func (p *Progress) end() {
	for _, a := range slices.Sorted(maps.Keys(p.partial)) {
		p.flushText(a)
	}
	p.clear()
	p.ended = true
}

// line prints a log line above the status line; the status line comes back
// at the next Tick.
func (p *Progress) line(format string, args ...any) {
	p.clear()
	io.WriteString(p.w, TerminalSafe(fmt.Sprintf(format, args...))+"\n")
}

func (p *Progress) clear() {
	if p.shown {
		fmt.Fprint(p.w, "\r\x1b[2K")
		p.shown = false
	}
}

// paused reports whether an agent of Pause is running.
func (p *Progress) paused() bool {
	if p.opts.Pause == nil {
		return false
	}
	for _, a := range p.agents {
		if !a.started.IsZero() && !a.finished && p.opts.Pause(a.name) {
			return true
		}
	}
	return false
}

// text adds streamed text of an agent; whole lines are printed at once, the
// rest waits for its newline (and shows in the status line).
func (p *Progress) text(agent, delta string) {
	b := p.partial[agent]
	if b == nil {
		b = &strings.Builder{}
		p.partial[agent] = b
	}
	b.WriteString(delta)
	p.lastText = agent
	s := b.String()
	i := strings.LastIndexByte(s, '\n')
	if i < 0 {
		return
	}
	for _, l := range strings.Split(s[:i], "\n") {
		p.line("    │ %s: %s", agent, strings.TrimRight(l, "\r"))
	}
	b.Reset()
	b.WriteString(s[i+1:])
}

// flushText prints an agent's pending streamed text.
func (p *Progress) flushText(agent string) {
	b := p.partial[agent]
	if b == nil {
		return
	}
	if s := b.String(); strings.TrimSpace(s) != "" {
		p.line("    │ %s: %s", agent, strings.TrimRight(s, "\r"))
	}
	delete(p.partial, agent)
}

var spinner = []rune("⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏")

// status is the status line: spinner, turn and its time, each running agent
// with its time and tool, how many are done and waiting, and the tail of the
// latest streamed text; cut to the width.
func (p *Progress) status() string {
	if p.turn == 0 || p.agents == nil {
		return ""
	}
	now := p.opts.Now()
	parts := []string{fmt.Sprintf("%c turn %d %s", spinner[p.frame%len(spinner)], p.turn, elapsed(now.Sub(p.turnStart)))}
	var running []string
	done, waiting := 0, 0
	for _, a := range p.agents {
		switch {
		case a.finished:
			done++
		case a.started.IsZero():
			waiting++
		default:
			s := a.name + " " + elapsed(now.Sub(a.started))
			if a.tools > 0 {
				s += " ⚙ " + a.tool
			}
			running = append(running, s)
		}
	}
	if len(running) > 0 {
		parts = append(parts, strings.Join(running, ", "))
	}
	if done > 0 {
		parts = append(parts, fmt.Sprintf("%d done", done))
	}
	if waiting > 0 {
		parts = append(parts, fmt.Sprintf("%d waiting", waiting))
	}
	s := strings.Join(parts, " · ")
	width := 80
	if p.opts.Width != nil {
		if w := p.opts.Width(); w > 0 {
			width = w
		}
	}
	room := width - 1 - len([]rune(s))
	if b := p.partial[p.lastText]; b != nil && room > 12 {
		tail := []rune(oneLine(b.String()))
		if prefix := " │ " + p.lastText + ": "; len(tail) > 0 && room-len([]rune(prefix)) > 4 {
			keep := room - len([]rune(prefix))
			if len(tail) > keep {
				tail = append([]rune("…"), tail[len(tail)-keep+1:]...)
			}
			s += prefix + string(tail)
		}
	}
	return Truncate(s, width-1)
}

// instanceOf is the agent of an instance's name, name[i]: ok when name is
// one.
func instanceOf(name string) (agent string, ok bool) {
	base, rest, found := strings.Cut(name, "[")
	if !found || !strings.HasSuffix(rest, "]") || len(rest) < 2 {
		return "", false
	}
	for _, c := range rest[:len(rest)-1] {
		if c < '0' || c > '9' {
			return "", false
		}
	}
	return base, true
}
