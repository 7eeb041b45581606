package report

import (
	"bytes"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ensemble-run/ensemble/events"
)

var t0 = time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)

// at is t0 plus ms milliseconds.
func at(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }

// clock is a fake clock.
type clock struct{ now time.Time }

func (c *clock) Now() time.Time { return c.now }

// feed sends events stamped by the clock at the given offsets.
func feed(p *Progress, c *clock, evs ...timed) {
	for _, e := range evs {
		c.now = at(e.ms)
		e.ev.Time = c.now
		p.Event(e.ev)
	}
}

type timed struct {
	ms int
	ev events.Event
}

func turnOne() []timed {
	return []timed{
		{0, events.Event{Type: events.RunStarted}},
		{0, events.Event{Type: events.TurnStarted, Turn: 1, Agents: []string{"writer", "checker", "human"}}},
		{10, events.Event{Type: events.AgentStarted, Turn: 1, Agent: "writer", Execution: 1}},
		{20, events.Event{Type: events.AgentStarted, Turn: 1, Agent: "checker", Execution: 1}},
		{30, events.Event{Type: events.ToolCallStarted, Turn: 1, Agent: "writer", Execution: 1, Tool: "lookup", ToolID: "c1", Arguments: `{"region": "EMEA"}`}},
		{130, events.Event{Type: events.ToolCallCompleted, Turn: 1, Agent: "writer", Execution: 1, Tool: "lookup", ToolID: "c1", Output: `{"sales": 12}`, Duration: 0.1}},
		{140, events.Event{Type: events.ToolCallStarted, Turn: 1, Agent: "writer", Execution: 1, Tool: "broken", ToolID: "c2", Arguments: `{}`}},
		{150, events.Event{Type: events.ToolCallCompleted, Turn: 1, Agent: "writer", Execution: 1, Tool: "broken", ToolID: "c2", Error: "exit status 1:\nboom", Duration: 0.01}},
		{160, events.Event{Type: events.TextDelta, Turn: 1, Agent: "writer", Execution: 1, Message: "EMEA grew "}},
		{170, events.Event{Type: events.TextDelta, Turn: 1, Agent: "writer", Execution: 1, Message: "12%.\nAPAC"}},
		{180, events.Event{Type: events.TextDelta, Turn: 1, Agent: "writer", Execution: 1, Message: " shrank"}},
		{500, events.Event{Type: events.AgentFinished, Turn: 1, Agent: "checker", Execution: 1, Duration: 0.48}},
		{900, events.Event{Type: events.AgentFinished, Turn: 1, Agent: "writer", Execution: 1, Duration: 0.89}},
		{1000, events.Event{Type: events.AgentStarted, Turn: 1, Agent: "human", Execution: 1}},
		{3000, events.Event{Type: events.AgentFinished, Turn: 1, Agent: "human", Execution: 1, Duration: 2}},
		{3000, events.Event{Type: events.AgentCompleted, Turn: 1, Agent: "writer", Execution: 1, Duration: 0.89, Output: "EMEA grew 12%.\nAPAC shrank"}},
		{3000, events.Event{Type: events.AgentFailed, Turn: 1, Agent: "checker", Execution: 1, Duration: 0.48, Error: "exit status 2: bad draft"}},
		{3000, events.Event{Type: events.AgentCompleted, Turn: 1, Agent: "human", Execution: 1, Duration: 2, Output: map[string]any{"ok": true}}},
		{3000, events.Event{Type: events.TurnCompleted, Turn: 1, Duration: 3}},
		{3000, events.Event{Type: events.Warning, Turn: 2, Agent: "checker", Message: "condition of checker ← writer failed"}},
		{3000, events.Event{Type: events.RunCompleted, Turn: 1, Message: "completed"}},
	}
}

func TestPlainProgress(t *testing.T) {
	var out bytes.Buffer
	c := &clock{}
	p := NewProgress(&out, ProgressOptions{Stream: true, Now: c.Now})
	feed(p, c, turnOne()...)
	p.Tick() // no status line without Live
	want := `turn 1: writer, checker, human
    → writer: lookup {"region": "EMEA"}
    ← writer: lookup (0.10s) {"sales": 12}
    → writer: broken {}
    ✗ writer: broken failed (0.01s) exit status 1: boom
    │ writer: EMEA grew 12%.
    │ writer: APAC shrank
  ✓ writer (0.89s) EMEA grew 12%. APAC shrank
  ✗ checker (0.48s) exit status 2: bad draft
  ✓ human (2.00s) {"ok":true}
  ! condition of checker ← writer failed
`
	if got := out.String(); got != want {
		t.Fatalf("got\n%s\nwant\n%s", got, want)
	}
}

func TestPlainProgressWithoutStreamIgnoresText(t *testing.T) {
	var out bytes.Buffer
	c := &clock{}
	p := NewProgress(&out, ProgressOptions{Now: c.Now})
	feed(p, c, turnOne()...)
	if strings.Contains(out.String(), "│") {
		t.Fatalf("streamed text shown without Stream:\n%s", out.String())
	}
}

const clearLine = "\r\x1b[2K"

// lastStatus is what follows the last line clear.
func lastStatus(s string) string {
	i := strings.LastIndex(s, clearLine)
	if i < 0 {
		return ""
	}
	return s[i+len(clearLine):]
}

func TestLiveProgress(t *testing.T) {
	var out bytes.Buffer
	c := &clock{}
	width := 200
	p := NewProgress(&out, ProgressOptions{Live: true, Stream: true, Now: c.Now, Width: func() int { return width },
		Pause: func(a string) bool { return a == "human" }})
	evs := turnOne()

	// Before anything: no status line.
	p.Tick()
	if out.Len() != 0 {
		t.Fatalf("drew before the run: %q", out.String())
	}
	feed(p, c, evs[:5]...) // writer is calling lookup; human waits for a slot
	if strings.Contains(out.String(), clearLine) {
		t.Fatal("an event redrew the status line: only Tick does")
	}
	c.now = at(100)
	p.Tick()
	if got, want := lastStatus(out.String()), "⠋ turn 1 0.1s · writer 0.1s ⚙ lookup, checker 0.1s · 1 waiting"; got != want {
		t.Fatalf("status %q\nwant   %q", got, want)
	}

	// A log line takes the status line down first, and it stays down until
	// the next Tick.
	before := out.Len()
	feed(p, c, evs[5])
	if got := out.String()[before:]; got != clearLine+"    ← writer: lookup (0.10s) {\"sales\": 12}\n" {
		t.Fatalf("log line written as %q", got)
	}

	// Streamed text: whole lines go to the log, the rest to the status line.
	feed(p, c, evs[6:11]...)
	c.now = at(400)
	p.Tick()
	if got, want := lastStatus(out.String()), "⠙ turn 1 0.4s · writer 0.4s, checker 0.4s · 1 waiting │ writer: APAC shrank"; got != want {
		t.Fatalf("status %q\nwant   %q", got, want)
	}
	if !strings.Contains(out.String(), "    │ writer: EMEA grew 12%.\n") {
		t.Fatalf("the whole line was not logged:\n%q", out.String())
	}

	// A narrow terminal: the line never wraps, and keeps the newest text.
	width = 40
	p.Tick()
	if got := lastStatus(out.String()); len([]rune(got)) > 39 || !strings.HasPrefix(got, "⠹ turn 1 0.4s") {
		t.Fatalf("narrow status %q (%d runes)", got, len([]rune(got)))
	}
	width = 200

	// Finished agents stop their clock.
	feed(p, c, evs[11])
	c.now = at(800)
	p.Tick()
	if got := lastStatus(out.String()); !strings.Contains(got, "writer 0.8s") || !strings.Contains(got, "1 done") || strings.Contains(got, "checker") {
		t.Fatalf("status %q", got)
	}

	// While the human answers, the status line stays down.
	feed(p, c, evs[12:14]...)
	c.now = at(2000)
	p.Tick()
	if got := onScreen(out.String()); got != "" {
		t.Fatalf("status drawn while an ask agent runs: %q", got)
	}
	n := out.Len()
	p.Tick()
	if out.Len() != n {
		t.Fatal("redrawn while paused")
	}

	// The end: no status line left behind, and the log is the plain one.
	feed(p, c, evs[14:]...)
	p.Tick()
	if onScreen(out.String()) != "" || !strings.HasSuffix(out.String(), "failed\n") {
		t.Fatalf("the run ended with %q", out.String()[max(0, out.Len()-80):])
	}
	var plain bytes.Buffer
	pp := NewProgress(&plain, ProgressOptions{Stream: true, Now: (&clock{}).Now})
	feed(pp, &clock{}, evs...)
	if got := stripStatus(out.String()); got != plain.String() {
		t.Fatalf("live log differs from the plain one:\n%s\n---\n%s", got, plain.String())
	}
}

// onScreen is the status line left on the screen: what follows the last
// newline or line clear.
func onScreen(s string) string {
	i := max(strings.LastIndex(s, "\n")+1, strings.LastIndex(s, clearLine)+len(clearLine))
	return s[i:]
}

// stripStatus removes status lines from live output, leaving the log.
func stripStatus(s string) string {
	var b strings.Builder
	for _, line := range strings.SplitAfter(s, "\n") {
		if i := strings.LastIndex(line, clearLine); i >= 0 {
			line = line[i+len(clearLine):]
		}
		b.WriteString(line)
	}
	return b.String()
}

func TestStartTicksAndStopCleans(t *testing.T) {
	var out syncBuffer
	p := NewProgress(&out, ProgressOptions{Live: true, Interval: 5 * time.Millisecond})
	p.Event(events.Event{Type: events.TurnStarted, Time: time.Now(), Turn: 1, Agents: []string{"a"}})
	p.Event(events.Event{Type: events.AgentStarted, Time: time.Now(), Turn: 1, Agent: "a"})
	stop := p.Start()
	// At least two draws before stopping (however slow the machine), then
	// the clearing one.
	for deadline := time.Now().Add(30 * time.Second); strings.Count(out.String(), clearLine) < 2 && time.Now().Before(deadline); {
		time.Sleep(5 * time.Millisecond)
	}
	stop()
	s := out.String()
	if strings.Count(s, clearLine) < 3 || !strings.HasSuffix(s, clearLine) {
		t.Fatalf("ticks %d, ends with %q", strings.Count(s, clearLine), s[max(0, len(s)-20):])
	}
	n := len(out.String())
	time.Sleep(20 * time.Millisecond)
	if len(out.String()) != n {
		t.Fatal("drawn after stop")
	}
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func TestProgressShowsRetriesAndBudget(t *testing.T) {
	var b strings.Builder
	p := NewProgress(&b, ProgressOptions{})
	p.Sink()(events.Event{Type: events.AgentRetry, Agent: "fetch", Attempt: 1, Error: "exit\ncode 3"})
	p.Sink()(events.Event{Type: events.BudgetExceeded, Agent: "writer", Message: "budget exceeded: the run's budget is spent: max_requests 2 reached (2 made)"})
	p.Close()
	for _, want := range []string{"↻ fetch: attempt 1 failed, trying again: exit code 3", "$ budget exceeded: the run's budget is spent"} {
		if !strings.Contains(b.String(), want) {
			t.Fatalf("progress lacks %q:\n%s", want, b.String())
		}
	}
}

// A fan-out gathered with fan_out.on_error: continue is not ✓ when its
// instances failed: ✗ when every one did, ! with the count when some did.
func TestFanOutWithFailedInstancesIsNotATick(t *testing.T) {
	for _, tc := range []struct {
		failed int
		want   string
	}{
		{0, "  ✓ w (0.30s) [1,2,3]\n"},
		{2, "  ! w (0.30s) 2 of 3 instances failed: [null,2,null]\n"},
		{3, "  ✗ w (0.30s) every instance failed (3)\n"},
	} {
		var out bytes.Buffer
		c := &clock{}
		p := NewProgress(&out, ProgressOptions{Now: c.Now})
		evs := []timed{{0, events.Event{Type: events.TurnStarted, Turn: 1, Agents: []string{"w"}}}}
		output := []any{1.0, 2.0, 3.0}
		for i := range tc.failed {
			evs = append(evs, timed{100, events.Event{Type: events.AgentFailed, Turn: 1, Agent: fmt.Sprintf("w[%d]", i*2%3), Error: "boom"}})
			output[i*2%3] = nil
		}
		evs = append(evs, timed{300, events.Event{Type: events.AgentCompleted, Turn: 1, Agent: "w", Duration: 0.3, Output: output}},
			timed{300, events.Event{Type: events.TurnCompleted, Turn: 1}})
		feed(p, c, evs...)
		if !strings.Contains(out.String(), tc.want) {
			t.Errorf("%d failed:\n%s\nwant %q", tc.failed, out.String(), tc.want)
		}
	}
}
