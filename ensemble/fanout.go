package ensemble

import (
	"strconv"
	"strings"

	"github.com/ensemble-run/ensemble/internal/conditions"
	"github.com/ensemble-run/ensemble/internal/opaque"
)

// DefaultMaxItems is fan_out.max_items when absent.
const DefaultMaxItems = 1000

// MaxFanOutItems is the largest fan_out.max_items: every instance of a
// fan-out is planned (its request, its events) before the first one runs,
// about a kilobyte each, so a list of a million items takes about a
// gigabyte, and one of ten million would take ten, whatever max_parallel.
const MaxFanOutItems = 1_000_000

// FanOut is an agent's fan_out block (docs/semantics.md#fan-out): the agent
// runs once per item of a list, each run an instance `name[i]`.
type FanOut struct {
	Pos Pos
	// Over is the expression, as written, whose value is the list.
	Over        string
	OverProgram CompiledList
	// MaxParallel caps the instances running at once; 0: the run's
	// parallel_agent_limit.
	MaxParallel int
	// MaxItems caps the list: more items fail the execution.
	MaxItems int
	// FailOnError is on_error: fail: a failed instance fails the agent.
	FailOnError bool
}

var fanOutKeys = []string{"over", "max_parallel", "max_items", "on_error"}

// fanOut decodes an agent's fan_out block; nil when absent.
func (d *decoder) fanOut(f field, a *Agent, where string) *FanOut {
	if !f.ok() {
		return nil
	}
	m := d.mapping(f.val, "fan_out of "+where, fanOutKeys...)
	if m == nil {
		return nil
	}
	fo := &FanOut{Pos: pos(f.val), MaxItems: DefaultMaxItems}
	over := m.get("over")
	fo.Over = d.str(over)
	d.need(over, strings.TrimSpace(fo.Over) == "")
	if strings.TrimSpace(fo.Over) != "" {
		p, err := conditions.CompileList(fo.Over)
		if err != nil {
			d.bad(over, "does not compile: %v", err)
		} else {
			fo.OverProgram = opaque.Make[CompiledList](p)
			d.conds = append(d.conds, condRef{f: over, p: &p.Program, what: "fan_out.over"})
		}
	}
	fo.MaxParallel = d.positive(m.get("max_parallel"))
	mi := m.get("max_items")
	switch n := d.positive(mi); {
	case n > MaxFanOutItems:
		d.bad(mi, "must be at most %d, got %d: every item of the list is planned before the first instance runs", MaxFanOutItems, n)
	case n > 0:
		fo.MaxItems = n
	}
	if oe := m.get("on_error"); oe.ok() {
		switch s := d.str(oe); s {
		case "fail":
			fo.FailOnError = true
		case "continue":
		default:
			d.bad(oe, "must be continue or fail, got %q", s)
		}
	}
	return fo
}

// fanOutConversation refuses conversation.triggers_conversation on an
// agent with a fan_out: its output is a list, never read for agent
// requests (docs/semantics.md#fan-out), so the setting could not work.
func (d *decoder) fanOutConversation(conv field, a *Agent, where string) {
	if a.FanOut == nil || !a.Conversation.TriggersConversation || conv.val == nil {
		return
	}
	at := conv.key
	for i := 0; i+1 < len(conv.val.Content); i += 2 {
		if k := conv.val.Content[i]; k.Value == "triggers_conversation" {
			at = k
		}
	}
	d.errorf(at, "%s: an agent with fan_out makes no agent requests (its output is a list): remove conversation.triggers_conversation", where)
}

// InstanceName is the name of instance i of a fan-out agent: `name[i]`.
func InstanceName(agent string, i int) string {
	return agent + "[" + strconv.Itoa(i) + "]"
}

// ParseInstanceName splits `name[i]` into name and i; ok is false when s is
// not an instance name.
func ParseInstanceName(s string) (agent string, i int, ok bool) {
	open := strings.LastIndexByte(s, '[')
	if open <= 0 || !strings.HasSuffix(s, "]") || open+2 > len(s)-1 {
		return "", 0, false
	}
	digits := s[open+1 : len(s)-1]
	if len(digits) > 1 && digits[0] == '0' {
		return "", 0, false
	}
	for _, c := range digits {
		if c < '0' || c > '9' || i > 1e8 {
			return "", 0, false
		}
		i = i*10 + int(c-'0')
	}
	return s[:open], i, true
}
